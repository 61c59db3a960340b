"""What SGLang 0.5's default ``mem_fraction_static`` keeps back beyond its base reserve (``core.engine.settings
.sglang_default_fraction``: 512 MiB + 1.5 x the chunk + 2 x the decode graph batch + tp x pp / 8 x 1024 MiB), by
release, read in the wheels from PyPI (``server_args.py`` ``_handle_gpu_memory_settings`` 0.5.3-0.5.18 with
``reserve_for_graph_mb`` / ``reserve_for_deepep_a2a_mb`` from 0.5.16; ``arg_groups/memory_hook.py``
``handle_gpu_memory_settings`` 0.5.19-0.5.23; read: 0.5.3, 0.5.9, 0.5.10, 0.5.13-0.5.20, 0.5.23), all in MiB:

- DP attention: decode graph batch x dp x 3, and x 1.5 more above a batch of 300 (every release read);
- prefill CUDA graphs, where the server captures them (0.5.10 on, NVIDIA): 8 MiB per capture size, or 1.5 GiB for
  an MLA model ("much higher than expected with fa3");
- all the above under the 10 GiB floor of a GPU over 60 GiB; then, above it, speculative decoding up to 0.5.13 (a
  separate draft model, STANDALONE, 6 GiB; EAGLE, EAGLE-3 and MTP/NEXTN 2 GiB to 0.5.9, 4 GiB in 0.5.10-0.5.13; none
  from 0.5.14) and DeepEP's all-to-all buffers from 0.5.15 (2 GiB; 1 GiB more under the floor with breakable
  prefill graphs from 0.5.17);
- a multimodal model's fraction is then scaled by ``vlm_factor``.

Not priced: post-capture KV sizing (``SGLANG_ENABLE_POST_CAPTURE_KV_SIZING``, off by default in 0.5.16-0.5.23), PD
disaggregation's roles, XPU's 2 GiB. Pure Python."""

from __future__ import annotations

from typing import Any, NamedTuple

from mha_cli.core.engine.prefill_graphs import (
    LATEST_READ,
    SPECULATIVE_GRAPHED_FROM,
    graph_kind,
    graph_tokens,
    graphed_release,
    graphs_off,
    release_triple,
)

GRAPH_SIZE_MIB = 8
"""MiB per prefill capture size (``len(piecewise_cuda_graph_tokens) * 8``, 0.5.10-0.5.13; ``len(prefill
cuda_graph_config.bs) * 8`` from 0.5.14): "only ... Non-Torch Memory", the graphs reuse torch's."""
MLA_GRAPH_MIB = 1536
"""An MLA model's prefill-graph reserve (``1.5 * 1024``, 0.5.10-0.5.23)."""
SPECULATIVE_MIB: tuple[tuple[tuple[int, int, int], int, int], ...] = (
    ((0, 5, 14), 0, 0),
    ((0, 5, 10), 4096, 6144),
    ((0, 0, 0), 2048, 6144),
)
"""(first release, EAGLE-family MiB, STANDALONE MiB), newest first: ``_handle_gpu_memory_settings`` adds ``2 * 1024``
for "eagle draft models and cuda graphs" in 0.5.3 and 0.5.9, ``4 * 1024`` in 0.5.10 and 0.5.13, ``6 * 1024`` for a
STANDALONE draft model in all four; 0.5.14's has neither. NGRAM adds none (mha does not express it)."""
DEEPEP_DECODE_FROM, DEEPEP_DECODE_MIB = (0, 5, 15), 2048
"""DeepEP's all-to-all buffers captured in the decode graph, above the floor (0.5.15 ``_handle_gpu_memory_settings``,
``reserve_for_deepep_a2a_mb`` 0.5.16-0.5.23; 0.5.14 has none)."""
DEEPEP_BREAKABLE_FROM, DEEPEP_BREAKABLE_MIB = (0, 5, 17), 1024
""""Prefill-BCG DeepEP delta", under the floor, where the prefill graphs are breakable (``reserve_for_graph_mb``
0.5.17-0.5.23; 0.5.16's lacks it)."""
VIT_BASELINE = 24 * 1024**2
"""``adjust_mem_fraction_for_vlm``'s ViT-L/14 baseline: 24 layers x 1024**2."""
VIT_DEPTH_KINDS = ("qwen2_5_vl", "qwen3_vl")
"""Towers whose vision_config names its layer count ``depth``: ``getattr(vision_config, "num_hidden_layers", 24)``
finds none there (SGLang's ``configs/qwen3_vl.py`` ``Qwen3VLVisionConfig``, 0.5.10 and 0.5.23; transformers 4.57.0,
5.3.0 and 5.19.0's ``Qwen2_5_VLVisionConfig``, whose ``attribute_map`` maps ``num_attention_heads`` alone), so
SGLang prices 24."""


class SglangServing(NamedTuple):
    """What SGLang's reserve reads of a deployment beyond tp, the chunk and the graph batch."""

    model: Any
    """The ``ModelSpec`` served (MLA, vision tower, family)."""
    pp: int = 1
    experts: Any = None
    """Its ``ExpertLayout`` (DP attention, the all-to-all backend); None: dense or sharded over tp."""
    speculative: Any = None
    """The deployment's ``SpeculativeSpec``; None: none."""
    host_kv_cache: bool = False
    """``--kv-offload-gib`` (the hierarchical cache)."""


class Reserve(NamedTuple):
    """MiB kept back beyond the base reserve: under the 10 GiB floor, above it; and what each part is."""

    under_floor_mib: float = 0.0
    over_floor_mib: float = 0.0
    parts: tuple[str, ...] = ()


NO_RESERVE = Reserve()
"""Nothing beyond the base reserve."""


class _ServerCase(NamedTuple):
    """The server as ``_handle_gpu_memory_settings`` sees it, for ``prefill_graphs.graphs_off`` (its ``PrefillCase``)."""

    model: Any
    speculative: Any
    experts: Any
    pp: int
    tp: int
    host_kv_cache: bool
    drafts_for: Any
    chunk_tokens: int


def capture_sizes(max_tokens: int) -> list[int]:
    """SGLang's prefill capture sizes up to ``max_tokens`` (``_generate_piecewise_cuda_graph_tokens`` 0.5.10-0.5.13,
    ``generate_prefill_cuda_graph_batch_sizes`` after): 4-32 by 4, 48-256 by 16, 288-512 by 32, 576-1024 by 64,
    1280-4096 by 256, then by 512."""
    sizes = [
        *range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
        *range(1280, 4097, 256), *range(4608, max_tokens + 1, 512),
    ]  # fmt: skip
    return [size for size in sizes if size <= max_tokens]


def _graphs_captured(serving: SglangServing, release: str, triple: tuple[int, int, int], tp: int, chunk: int) -> bool:
    """Whether the server captures prefill graphs when it sizes the fraction: ``graphs_off``'s server-side reasons
    (all decided before ``_handle_gpu_memory_settings``), without those of one prompt step (an EAGLE target's prompt
    from 0.5.11, still captured) or decided after it (DeepSeek-V3's trtllm_mla on SM100: no compute capability)."""
    speculative = serving.speculative if triple < SPECULATIVE_GRAPHED_FROM else None
    case = _ServerCase(serving.model, speculative, serving.experts, serving.pp, tp, serving.host_kv_cache, None, chunk)
    return graphs_off(case, release) is None


def sglang_reserve(
    serving: SglangServing | None,
    generation: str,
    release: str | None,
    vendor: str,
    *,
    tp: int,
    chunk: int,
    graph_bs: int,
    dp: int,
) -> Reserve:
    """SGLang ``release`` (None: the newest read)'s reserve for ``serving`` beyond the base one, at ``tp``, the
    undivided ``chunk`` (tokens), decode graph batch ``graph_bs`` and ``dp`` DP-attention ranks (1: none).
    ``serving`` None (no model known), a commit or a dev build: the DP-attention reserve alone."""
    under, over, parts = 0.0, 0.0, []
    if dp > 1:
        under = graph_bs * dp * (3 + (1.5 if graph_bs > 300 else 0))
        parts.append(f"DP attention {graph_bs} x {dp} x {3 if graph_bs <= 300 else 4.5} = {under:,.0f} MiB")
    triple = release_triple(release or LATEST_READ) if generation == "sglang-0.5" else None
    if triple is None or serving is None:
        return Reserve(under, over, tuple(parts))
    model, experts = serving.model, serving.experts
    deepep = experts is not None and experts.dp_attention and experts.a2a_backend == "deepep"
    graphed = graphed_release(generation, release, vendor)  # None: eager (before 0.5.10, or not NVIDIA)
    if graphed is not None and _graphs_captured(serving, graphed, triple, tp, chunk):
        if model.attention.mla is not None:
            under += MLA_GRAPH_MIB
            parts.append(f"MLA prefill graphs {MLA_GRAPH_MIB:,} MiB")
        else:
            sizes = len(capture_sizes(graph_tokens(_ServerCase(model, None, None, 1, tp, False, None, chunk), graphed)))
            under += sizes * GRAPH_SIZE_MIB
            parts.append(f"prefill graphs {sizes} sizes x {GRAPH_SIZE_MIB} = {sizes * GRAPH_SIZE_MIB:,} MiB")
        if deepep and triple >= DEEPEP_BREAKABLE_FROM and graph_kind(graphed) == "breakable":
            under += DEEPEP_BREAKABLE_MIB
            parts.append(f"DeepEP breakable prefill graphs {DEEPEP_BREAKABLE_MIB:,} MiB")
    spec = serving.speculative
    if spec is not None:
        eagle, standalone = next((e, s) for since, e, s in SPECULATIVE_MIB if triple >= since)
        extra = standalone if spec.method == "draft_model" else eagle
        if extra:
            over += extra
            parts.append(f"{spec.method} drafter {extra:,} MiB above the floor")
    if deepep and triple >= DEEPEP_DECODE_FROM:
        over += DEEPEP_DECODE_MIB
        parts.append(f"DeepEP decode buffers {DEEPEP_DECODE_MIB:,} MiB above the floor")
    return Reserve(under, over, tuple(parts))


def vlm_factor(vision: Any) -> float:
    """``adjust_mem_fraction_for_vlm`` (0.5.3-0.5.23): a multimodal model's fraction x 0.95 x (1 - 0.1 x (its ViT's
    layers x width**2 / ViT-L's - 1)), the second factor kept within 0.8-1.05; the layers SGLang finds
    (``VIT_DEPTH_KINDS``: 24)."""
    layers = 24 if vision.kind in VIT_DEPTH_KINDS else vision.n_layers
    ratio = layers * vision.d_model**2 / VIT_BASELINE
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
