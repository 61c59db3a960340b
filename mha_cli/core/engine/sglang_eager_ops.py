"""The torch and custom operators SGLang's model code launches, one by one, for one prefill (EXTEND) forward run
eagerly: counted per layer part from the model source, not the fused kernels ``core.cost.work`` counts.

Read in the sglang 0.5.9 wheel (PyPI ``sglang-0.5.9-py3-none-any.whl``), CUDA path, bf16 unless said; a view,
split or reshape launches nothing and is not counted. Each entry: (operators, where they were read).

- ``decoder``: ``models/qwen3.py`` ``Qwen3DecoderLayer.forward`` (``llama.py`` ``LlamaDecoderLayer.forward`` is the
  same): ``layer_communicator.prepare_attn`` (``input_layernorm``, a fused add-RMSNorm) and ``prepare_mlp``
  (``post_attention_layernorm``), 2.
- ``attention``: ``Qwen3Attention.forward_prepare_native``: ``qkv_proj``, ``rotary_emb``; ``self.attn``
  (``RadixAttention`` -> ``layers/attention/flashinfer_backend.py`` ``forward_extend``: ``set_kv_buffer`` and one
  ragged prefill for a chunk without a cached prefix); ``o_proj``: 5. ``qk_norm``: ``apply_qk_norm``'s ``q_norm``
  and ``k_norm``, 2 more.
- ``mla_attention``: ``models/deepseek_common/attention_forward_methods/forward_mha.py``
  ``forward_normal_prepare`` / ``forward_normal_core`` (the MHA path ``attention_backend_handler.py``
  ``_handle_attention_backend`` picks for a prefill without a prefix): the fused ``q_a`` + ``kv_a`` projection,
  ``q_a_layernorm``, ``q_b_proj``, ``kv_a_layernorm``, ``rotary_emb``, the ``q[..., nope:] = q_pe`` copy,
  ``_set_mla_kv_buffer``, ``kv_b_proj``, ``_concat_and_cast_mha_k``, ``attn_mha``, ``o_proj``: 11.
- ``mlp``: ``Qwen3MLP`` / ``LlamaMLP.forward``: ``gate_up_proj``, ``act_fn`` (SiluAndMul), ``down_proj``: 3.
- ``moe``: ``models/qwen3_moe.py`` ``Qwen3MoeSparseMoeBlock.forward_normal``: ``gate``, ``topk``, ``experts``
  (``layers/moe/fused_moe_triton/fused_moe.py`` ``fused_experts_impl``: ``moe_align_block_size``, two
  ``invoke_fused_moe_kernel``, ``silu_and_mul``, ``moe_sum_reduce``): 7.
- ``shared_expert``: ``models/deepseek_v2.py`` ``DeepseekV2MoE.forward_normal``'s ``_forward_shared_experts`` (a
  ``DeepseekV2MLP``: 3) and the add to the routed output: 4 an expert.
- ``all_reduce``: ``tensor_model_parallel_all_reduce`` after ``o_proj`` (``prepare_mlp``) and after the MLP or MoE
  block, where tp > 1: 2.
- ``quantised_linear``: fp8 and nvfp4 linear layers quantise their input first, 1 more each projection of a layer
  but the router's (``layers/quantization/fp8_utils.py``: ``sglang_per_token_group_quant_fp8`` before a block-fp8
  GEMM, ``scaled_fp8_quant`` in ``apply_fp8_linear``; ``modelopt_quant.py``: ``fp4_quantize`` before the nvfp4
  GEMM); the fused MoE kernels quantise inside theirs.
- ``outside``: ``embed_tokens``, the final ``norm``, ``lm_head`` and ``LogitsProcessor``'s last-token gather, and
  the sampler's temperature, softmax and sampling: 7, once a forward.

Linear-attention and state-space layers (Qwen3-Next, Kimi-Linear) are not read here: they are counted as the
``attention`` part. Pure Python.
"""

from mha_cli.core.schemas import ModelSpec

SOURCE = "sglang 0.5.9 wheel (PyPI), CUDA path; see mha_cli/core/engine/sglang_eager_ops.py"
"""Where the counts below were read."""

EAGER_OPS: dict[str, int] = {
    "decoder": 2,  # qwen3.py Qwen3DecoderLayer.forward: prepare_attn / prepare_mlp norms
    "attention": 5,  # qwen3.py forward_prepare_native + flashinfer_backend.py forward_extend + o_proj
    "qk_norm": 2,  # qwen3.py apply_qk_norm: q_norm, k_norm
    "mla_attention": 11,  # deepseek_common/attention_forward_methods/forward_mha.py forward_normal_prepare/_core
    "mlp": 3,  # qwen3.py / llama.py MLP.forward: gate_up_proj, act_fn, down_proj
    "moe": 7,  # qwen3_moe.py forward_normal + fused_moe.py fused_experts_impl
    "shared_expert": 4,  # deepseek_v2.py DeepseekV2MoE.forward_normal: shared MLP (3) + the add
    "all_reduce": 2,  # tensor_model_parallel_all_reduce after o_proj and after the MLP/MoE, tp > 1
    "quantised_linear": 1,  # fp8_utils.py / modelopt_quant.py: the input's quantisation before each fp8/fp4 GEMM
    "outside": 7,  # embedding, final norm, lm_head, logits gather, sampler (temperature, softmax, sample)
}
"""Operators launched eagerly per part of one forward (see the module docstring for each part's source lines)."""

QUANTISED_INPUTS = frozenset({"fp8", "fp8-block", "nvfp4"})
"""Weight formats whose linear layers quantise their input with one extra operator (``quantised_linear``)."""


def layer_ops(model: ModelSpec, layer: int, tp: int, weight_dtype: str) -> int:
    """Operators one eager prefill forward launches for decoder layer ``layer`` (0-based) of ``model`` on one of
    ``tp`` ranks with ``weight_dtype`` weights."""
    attention = model.attention
    mla = attention.mla is not None
    ops = EAGER_OPS["decoder"] + EAGER_OPS["mla_attention" if mla else "attention"]
    ops += EAGER_OPS["qk_norm"] if attention.qk_norm and not mla else 0
    projections = 4 if mla else 2  # MLA: fused q_a + kv_a, q_b, kv_b, o; else qkv, o
    moe = model.block.moe
    if model.is_moe_layer(layer) and moe is not None:
        ops += EAGER_OPS["moe"] + EAGER_OPS["shared_expert"] * min(moe.n_shared_experts, 1)
        projections += 2 * min(moe.n_shared_experts, 1)  # the shared expert's gate_up and down
    elif model.has_mlp(layer):
        ops += EAGER_OPS["mlp"]
        projections += 2
    if tp > 1:
        ops += EAGER_OPS["all_reduce"]
    if weight_dtype in QUANTISED_INPUTS:
        ops += EAGER_OPS["quantised_linear"] * projections
    return ops


def forward_ops(model: ModelSpec, tp: int, weight_dtype: str, *, outside: bool = True) -> int:
    """Operators one eager prefill forward of ``model``'s layers launches on one of ``tp`` ranks, plus the embedding,
    head and sampler's when ``outside`` (a pipeline's stages count those once)."""
    layers = sum(layer_ops(model, i, tp, weight_dtype) for i in range(model.n_layers))
    return layers + (EAGER_OPS["outside"] if outside else 0)
