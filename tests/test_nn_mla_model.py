"""DeepSeek-V2/V3 (MLA + YaRN + MoE) and Qwen3-MoE against transformers: the same config.json, the same
weights, the same logits.

A scaled-down config.json of each family builds transformers' model (random weights, fp32, nothing
downloaded); ``import_hf_config`` reads the same dict into a ``ModelSpec``; ``build_model`` builds ours,
which loads transformers' state dict strictly. Logits must agree within 1e-4 for a full prefill and
for a cached decode (a 5-token prefill, then one token at a time), in both MLA modes.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.nn import LatentCache, build_model  # noqa: E402
from mha_cli.nn.moe import MoE  # noqa: E402

TOLERANCE = 1e-4
SEQ_LEN, PREFILL, VOCAB = 12, 5, 128

DEEPSEEK_V3 = dict(
    model_type="deepseek_v3", vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
    num_hidden_layers=3, first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=4,
    n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, n_group=2, topk_group=1,
    routed_scaling_factor=2.5, norm_topk_prob=True,
    q_lora_rank=24, kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=12,
    rope_theta=10000.0, max_position_embeddings=640, rms_norm_eps=1e-6, tie_word_embeddings=False,
    rope_scaling=dict(type="yarn", factor=40.0, mscale=1.0, mscale_all_dim=1.0, beta_fast=32, beta_slow=1,
                      original_max_position_embeddings=16),
    initializer_range=0.1, hidden_act="silu",
)  # fmt: skip
# mscale != mscale_all_dim: YaRN's attention factor on cos and sin is no longer 1; rotate-half RoPE pairs.
DEEPSEEK_V3_HALF = dict(
    DEEPSEEK_V3, rope_interleave=False,
    rope_scaling=dict(DEEPSEEK_V3["rope_scaling"], mscale=1.0, mscale_all_dim=0.5),
)  # fmt: skip
# DeepSeek-V2: softmax routing limited to the best groups by their max score, no query latent.
DEEPSEEK_V2 = dict(
    DEEPSEEK_V3, model_type="deepseek_v2", q_lora_rank=None, topk_method="group_limited_greedy",
    num_experts_per_tok=3, n_group=4, topk_group=2, routed_scaling_factor=1.5, norm_topk_prob=False,
    rope_scaling=dict(DEEPSEEK_V3["rope_scaling"], mscale=0.707, mscale_all_dim=0.707),
)  # fmt: skip
# The hook's MLA copy (review 292): 5 heads of odd widths (34 no-RoPE + 16 RoPE, values 33), a latent of 133, no query
# latent and no YaRN, at a residual of 128: the shapes the equality above never took.
HOOK_MLA = dict(
    DEEPSEEK_V3, model_type="deepseek_v3", hidden_size=128, num_attention_heads=5, num_key_value_heads=5,
    q_lora_rank=None, kv_lora_rank=133, qk_rope_head_dim=16, qk_nope_head_dim=34, v_head_dim=33, rope_scaling=None,
    first_k_dense_replace=3,
)  # fmt: skip
QWEN3_MOE = dict(
    model_type="qwen3_moe", vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8,
    num_experts_per_tok=2, norm_topk_prob=True, rope_theta=1000000.0, rms_norm_eps=1e-6,
    max_position_embeddings=256, tie_word_embeddings=False, initializer_range=0.1, hidden_act="silu",
)  # fmt: skip

CASES = {  # name: (config.json, transformers class, MLA modes)
    "deepseek-v3": (DEEPSEEK_V3, "DeepseekV3ForCausalLM", ("absorbed", "naive")),
    "deepseek-v3-rotate-half": (DEEPSEEK_V3_HALF, "DeepseekV3ForCausalLM", ("absorbed",)),
    "deepseek-v2": (DEEPSEEK_V2, "DeepseekV2ForCausalLM", ("absorbed",)),
    "hook-mla": (HOOK_MLA, "DeepseekV3ForCausalLM", ("absorbed", "naive")),
    "qwen3-moe": (QWEN3_MOE, "Qwen3MoeForCausalLM", ("absorbed",)),  # no MLA: the mode is unused
}


def reference_model(config: dict[str, Any], class_name: str, seed: int = 0) -> torch.nn.Module:
    """transformers' model with random weights; norms, biases and DeepSeek's routing bias moved off 1 and 0."""
    torch.manual_seed(seed)
    config_class = transformers.AutoConfig.for_model(config["model_type"]).__class__
    model = getattr(transformers, class_name)(config_class(**{k: v for k, v in config.items() if k != "model_type"}))
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name.endswith("norm.weight") or name.endswith("bias"):
                tensor.add_(torch.randn_like(tensor) * 0.1)
    return model.eval()


def max_errors(config: dict[str, Any], class_name: str, mode: str) -> tuple[float, float]:
    """(prefill, cached decode) max abs logit differences from transformers' full forward."""
    reference = reference_model(config, class_name)
    spec = import_hf_config(config).model
    ours = build_model(spec, dtype=torch.float32, mla_mode=mode).eval()  # type: ignore[arg-type]
    ours.load_state_dict(reference.state_dict(), strict=True)
    ids = torch.randint(0, VOCAB, (2, SEQ_LEN), generator=torch.Generator().manual_seed(1))  # (b, s)
    with torch.no_grad():
        expected = reference(ids).logits  # (b, s, v)
        prefill = ours(ids)  # (b, s, v)
        caches = ours.new_cache(batch=2, max_seq=SEQ_LEN)
        steps = [ours(ids[:, :PREFILL], caches, start_pos=0)]
        steps += [ours(ids[:, pos : pos + 1], caches, start_pos=pos) for pos in range(PREFILL, SEQ_LEN)]
    if spec.attention.mla is not None and mode == "absorbed":
        assert all(isinstance(cache, LatentCache) for cache in caches)  # the cache stayed the latent
    decoded = torch.cat(steps, dim=1)  # (b, s, v)
    return (prefill - expected).abs().max().item(), (decoded - expected).abs().max().item()


RUNS = [(name, mode) for name, (_, _, modes) in CASES.items() for mode in modes]


@pytest.mark.parametrize(("name", "mode"), RUNS, ids=[f"{name}-{mode}" for name, mode in RUNS])
def test_logits_equal_transformers(name: str, mode: str) -> None:
    config, class_name, _ = CASES[name]
    prefill, decode = max_errors(config, class_name, mode)
    assert prefill < TOLERANCE, f"prefill max abs error {prefill:.2e}"
    assert decode < TOLERANCE, f"cached decode max abs error {decode:.2e}"


def test_dense_first_layers_and_moe_after_them() -> None:
    spec = import_hf_config(DEEPSEEK_V3).model
    model = build_model(spec, device="meta")
    kinds = [type(layer.mlp).__name__ for layer in model.model.layers]
    assert kinds == ["MLP", "MoE", "MoE"]  # first_k_dense_replace = 1
    assert isinstance(model.model.layers[1].mlp, MoE)


def test_a_broken_yarn_softmax_scale_is_caught() -> None:
    """The control: without DeepSeek's mscale^2 on the softmax scale, the logits visibly differ."""
    from mha_cli.nn.mla import MLAttention

    reference = reference_model(DEEPSEEK_V3, "DeepseekV3ForCausalLM")
    ours = build_model(import_hf_config(DEEPSEEK_V3).model, dtype=torch.float32).eval()
    ours.load_state_dict(reference.state_dict(), strict=True)
    for layer in ours.model.layers:
        assert isinstance(layer.self_attn, MLAttention)
        layer.self_attn.scale = layer.self_attn.qk_head_dim**-0.5  # plain 1/sqrt(d), no YaRN correction
    ids = torch.randint(0, VOCAB, (2, SEQ_LEN), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        error = (ours(ids) - reference(ids).logits).abs().max().item()
    assert error > 100 * TOLERANCE


def test_rope_interleave_and_yarn_are_read_from_config_json() -> None:
    spec = import_hf_config(DEEPSEEK_V3).model
    assert (
        spec.attention.mla is not None and spec.attention.mla.rope_interleave
    )  # absent: transformers' DeepseekV3 default, True
    assert spec.attention.rope is not None and spec.attention.rope.scaling is not None
    assert (
        spec.attention.rope.scaling.type,
        spec.attention.rope.scaling.factor,
        spec.attention.rope.scaling.mscale_all_dim,
    ) == ("yarn", 40.0, 1.0)
    half = import_hf_config(DEEPSEEK_V3_HALF).model
    assert half.attention.mla is not None and not half.attention.mla.rope_interleave


if __name__ == "__main__":  # the equality table: python -m tests.test_nn_mla_model
    print(f"{'family':24s} {'MLA mode':9s} {'prefill max abs':>16s} {'decode max abs':>15s}")
    for family, mla_mode in RUNS:
        errors = max_errors(CASES[family][0], CASES[family][1], mla_mode)
        print(f"{family:24s} {mla_mode if family != 'qwen3-moe' else '-':9s} {errors[0]:16.2e} {errors[1]:15.2e}")
