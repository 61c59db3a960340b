"""Which of vLLM's two GPU model runners profiles a model, by release: the V1 runner or Model Runner V2.

``VllmConfig.use_v2_model_runner`` (``config/vllm.py``) picks ``v1/worker/gpu/model_runner.py`` (V2) over
``v1/worker/gpu_model_runner.py`` (V1) when ``VLLM_USE_V2_MODEL_RUNNER`` is unset; its default, read in the wheels:

- 0.21 and before: never (the variable defaults to False, ``envs.py``);
- 0.22-0.23: ``Qwen3ForCausalLM`` (0.23 adds ``LlamaForCausalLM`` and ``MistralForCausalLM``), dense and
  unquantized (``not model_config.is_moe and not model_config.is_quantized``; ``is_quantized``: the checkpoint's
  config carries a ``quantization_config``, ``config/model.py``, 0.22.0). The plan reads that from its weight format
  (``EngineSettings.quantized_checkpoint``); an online ``--quantization`` of a bf16 checkpoint, which leaves the
  config without one, is not told apart;
- 0.24: the architectures of ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` (Qwen3, Llama, Mistral, DeepSeek-V2,
  Qwen2-MoE, GraniteMoE), whatever else;
- 0.25-0.28: every dense (non-MoE) model and the listed MoE architectures (DeepSeek-V2, Qwen2-MoE, GraniteMoE),
  except hybrid (recurrent) and attention-free ones (0.27 lets a listed hybrid through; none is modelled);
- 0.29 and later (read in 0.29.0-0.33.0): every model, on CUDA.

A vision model's class (``...ForConditionalGeneration``) is in no list before 0.29. In every release the runner
falls back to V1 for features it lacks (``_get_v2_model_runner_unsupported_features``); of those the plan models
speculative decoding by the methods it prices (mtp, eagle, eagle3, draft_model):

- 0.22.0-0.29.0 (read in 0.22.0, 0.24.0, 0.27.1, 0.28.0, 0.29.0) speculate on V2 only with ``eagle``, ``eagle3``
  and ``mtp`` (dflash, dspark: not priced here), and not ``eagle3`` with pipeline parallelism ("EAGLE3 with pipeline
  parallelism"), so a ``draft_model`` drafter keeps V1;
- 0.30.0 lists methods instead: ngram, ngram_gpu, ``draft_model`` (vLLM PR #43091), suffix, medusa, mlp_speculator,
  custom_class; EAGLE-3 at pp > 1 runs on V2, a ``draft_model`` drafter still keeps V1;
- 0.31.0 drops ``draft_model`` from that list (ngram, ngram_gpu, suffix, medusa, mlp_speculator, custom_class);
  0.32.0 drops ngram too (suffix, medusa, mlp_speculator, custom_class): every priced method runs on V2.

Also on that list, not modelled: external_launcher with pp > 1, parallel drafting and dual batch overlap
(0.29-0.32); stock torch.compile, sequence parallelism at tp > 1 and elastic EP (0.29-0.31); custom logits
processors (0.29-0.30); KV sharing fast prefill (0.29); mamba cache mode ``all`` (0.30-0.31); a draft model of
another vocabulary (0.32). From 0.30 ``use_v2_model_runner`` forces V2 for HiSparse and watermarking (not priced).

On ROCm (``current_platform.is_rocm()``) the defaults are CUDA's except: 0.27's
``default_v2_model_runner_architectures`` drops Kimi-K3 from the list and 0.28's DeepSeek-V4 (no family here, so
nothing moves); 0.29-0.31's ``use_v2_model_runner`` keeps V1 for ``ROCM_DEFAULT_MRV1_ARCHITECTURES``:
``DeepseekV32ForCausalLM`` and ``DeepseekV4ForCausalLM`` in 0.29, ``GlmMoeDsaForCausalLM`` too in 0.30-0.31 (0.31 lets
V2 through where V1 lacks a feature, ``_get_v1_model_runner_unsupported_features``: none modelled); 0.22-0.26 and
0.32.0 check no platform (read in the wheels of 0.22.0-0.32.0, ``config/vllm.py``; ``platforms/rocm.py`` sets no
runner).

The runner also decides whether the KV budget sets CUDA-graph memory aside (``v1/worker/gpu_worker.py``
``determine_available_memory`` subtracts ``model_runner.profile_cudagraph_memory()``): the V1 runner estimates it
from 0.21; V2's ``profile_cudagraph_memory`` (``v1/worker/gpu/model_runner.py``) is ``return 0`` in 0.22.0-0.28.0
("It is TBD whether we keep this API or not"), and from 0.29.0 (read in 0.29.0-0.32.0) calls
``v1/worker/gpu/cudagraph_utils.py`` ``profile_cudagraph_memory``, which captures the graphs in a throwaway pool.
Where it returns 0 the graphs are captured after the pool, out of the (1 - utilisation) headroom.
"""

from __future__ import annotations

from mha_cli.core.engine.generations import Version
from mha_cli.core.engine.sampler import SamplerPath
from mha_cli.core.schemas import ModelSpec

V2_FIRST: Version = (0, 22)
"""The first release whose V2 runner is the default for some model (dense, unquantized, listed)."""
V2_DEFAULT_FROM: Version = (0, 24)
"""The first release whose V2 runner is the default for a quantized or MoE model (a listed one)."""
DENSE_FROM: Version = (0, 25)
"""The first release that defaults every dense, non-hybrid model to the V2 runner."""
EVERY_MODEL_FROM: Version = (0, 29)
"""The first release that defaults every model to the V2 runner."""
V2_ESTIMATES_GRAPHS_FROM: Version = (0, 29)
"""The first release whose V2 runner estimates its CUDA graphs before the pool (0.22-0.28 return 0)."""
V2_GREEDY_FROM: Version = (0, 27)
"""The first release whose V2 sampler leaves the dummy run's logits in their dtype (``core.engine.sampler``)."""
V2_WARMUP_PASS_FROM: Version = (0, 33)
"""The first release whose V2 dummy run samples a second time with warmup parameters (``core.engine.sampler``)."""
LISTED_0_22 = ("Qwen3ForCausalLM",)
"""0.22's ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``."""
LISTED_0_23 = ("Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM")
"""0.23's ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``."""
LISTED_0_24 = (
    "Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM",
    "GraniteMoeForCausalLM",
)  # fmt: skip
"""0.24's ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``."""
LISTED_MOE = ("DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM")
"""The MoE architectures 0.25-0.28 list (0.26+ also list Inkling, LongCat-Flash-Ngram, Kimi-K3, no family here)."""
V2_SPECULATIVE_METHODS = ("eagle", "eagle3", "mtp")
"""The priced speculative methods 0.22-0.29's V2 runner runs (``_get_v2_model_runner_unsupported_features``)."""
V2_EAGLE3_PP_FROM: Version = (0, 30)
"""The first release whose V2 runner runs EAGLE-3 with pipeline parallelism (0.22-0.29 keep it on V1)."""
V2_DRAFT_MODEL_FROM: Version = (0, 31)
"""The first release whose V2 runner runs a ``draft_model`` drafter (0.22-0.30 keep it on V1)."""
ROCM_V1_0_29 = ("DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM")
"""0.29's ``ROCM_DEFAULT_MRV1_ARCHITECTURES``: kept on the V1 runner on ROCm."""
ROCM_V1_0_30 = (*ROCM_V1_0_29, "GlmMoeDsaForCausalLM")
"""0.30's and 0.31's ``ROCM_DEFAULT_MRV1_ARCHITECTURES``."""
ROCM_V1_FIRST, ROCM_V1_UNTIL = (0, 29), (0, 32)
"""The releases whose ROCm default keeps some architectures on the V1 runner (0.32.0 has no such list)."""


def rocm_keeps_v1(release: Version | None, model: ModelSpec) -> bool:
    """Whether vLLM ``release`` on ROCm keeps ``model`` on the V1 runner whatever CUDA does (module docstring)."""
    if release is None or not ROCM_V1_FIRST <= release < ROCM_V1_UNTIL:
        return False
    return _listed(model, ROCM_V1_0_29 if release < (0, 30) else ROCM_V1_0_30)


def speculation_keeps_v1(release: Version | None, method: str | None, pp: int = 1) -> bool:
    """Whether speculative decoding by ``method`` (None: none) at ``pp`` stages keeps vLLM ``release`` on the V1
    runner: eagle3 at pp > 1 until 0.29, a draft model (any method but eagle, eagle3 and mtp) until 0.30."""
    if method is None or release is None:
        return False
    if method == "eagle3" and pp > 1:
        return release < V2_EAGLE3_PP_FROM
    return method not in V2_SPECULATIVE_METHODS and release < V2_DRAFT_MODEL_FROM


def _families(architectures: tuple[str, ...]) -> set[str]:
    """The families (``model_type``) of ``architectures``, as ``core.families.architectures`` maps them."""
    from mha_cli.core.families.architectures import ARCHITECTURES  # only 0.24-0.28 need it: kept off the default

    return {ARCHITECTURES[name] for name in architectures if name in ARCHITECTURES}


def _listed(model: ModelSpec, architectures: tuple[str, ...]) -> bool:
    """Whether ``model``'s causal-LM class is one of ``architectures`` (a vision model's is not)."""
    return model.vision is None and model.family in _families(architectures)


def runs_v2_model_runner(
    release: Version | None,
    model: ModelSpec,
    quantized: bool = False,
    *,
    speculative: str | None = None,
    pp: int = 1,
    rocm: bool = False,
) -> bool:
    """Whether vLLM ``release`` (None: the latest read, 0.33) profiles ``model`` on Model Runner V2 on CUDA, or on
    ROCm (``rocm``, ``rocm_keeps_v1``); ``quantized``: the checkpoint carries a quantization_config (which 0.22-0.23
    keep on the V1 runner); ``speculative``: the speculative method, if any, at ``pp`` pipeline stages
    (``speculation_keeps_v1``)."""
    if release is not None and release < V2_FIRST:
        return False
    if speculation_keeps_v1(release, speculative, pp) or (rocm and rocm_keeps_v1(release, model)):
        return False
    if release is not None and release < V2_DEFAULT_FROM:
        listed = LISTED_0_22 if release < (0, 23) else LISTED_0_23
        return _listed(model, listed) and model.block.moe is None and not quantized
    if release is None or release >= EVERY_MODEL_FROM:
        return True
    if release < DENSE_FROM:
        return _listed(model, LISTED_0_24)
    if model.recurrent is not None:
        return False
    return model.block.moe is None or _listed(model, LISTED_MOE)


def profiling_sampler(
    sampler: SamplerPath,
    release: Version | None,
    model: ModelSpec,
    quantized: bool = False,
    *,
    speculative: str | None = None,
    pp: int = 1,
    rocm: bool = False,
) -> SamplerPath:
    """The path vLLM ``release``'s (None: the latest read) dummy sampler run takes for ``model`` on a GPU: ``sampler``
    (the V1 runner's) unless Model Runner V2 profiles it, whose dummy run samples greedily, and from 0.33 a second
    time with warmup parameters, through FlashInfer where the V1 runner's ``sampler`` would be FlashInfer's
    (``core.engine.sampler``); ``speculative``, ``pp``, ``rocm``: as ``runs_v2_model_runner``'s."""
    if not runs_v2_model_runner(release, model, quantized, speculative=speculative, pp=pp, rocm=rocm):
        return sampler
    if release is None or release >= V2_WARMUP_PASS_FROM:
        return "v2-flashinfer" if sampler == "flashinfer" else "v2-triton"
    return "v2-greedy" if release >= V2_GREEDY_FROM else "v2-fp32-copy"


def estimates_cuda_graphs(
    release: Version | None,
    model: ModelSpec,
    quantized: bool = False,
    *,
    speculative: str | None = None,
    pp: int = 1,
    rocm: bool = False,
) -> bool:
    """Whether vLLM ``release`` (>= 0.21; None: the latest read, 0.33) sets ``model``'s CUDA-graph memory aside in
    the KV budget: the V1 runner always, Model Runner V2 from 0.29 (see the module docstring); ``speculative``,
    ``pp``, ``rocm``: as ``runs_v2_model_runner``'s."""
    if not runs_v2_model_runner(release, model, quantized, speculative=speculative, pp=pp, rocm=rocm):
        return True
    return release is None or release >= V2_ESTIMATES_GRAPHS_FROM
