"""SGLang 0.4.8-0.5.2's memory defaults: a flat reserve by GPU tier, between 0.4.0-0.4.7's fraction by tp alone
(``settings.sglang_04_fraction``) and 0.5.3's reserve formula (``settings.sglang_default_fraction``).

Read in the wheels' ``sglang/srt/server_args.py`` ``ServerArgs.__post_init__`` (0.4.8, 0.4.9, 0.4.9.post3, 0.4.10,
0.4.10.post1, 0.4.10.post2, 0.5.1, 0.5.1.post1, 0.5.1.post3, 0.5.2; 0.4.7 still sets the fraction by tp; 0.5.3 has the
formula). With ``gpu_mem`` the GPU's MiB and ``parallel`` = tp x pp:
- reserve: (2.8 + parallel / 10) GiB under 35 GiB; (9.5 + parallel / 2) GiB under 90 GiB; (12 + parallel / 2) GiB
  under 160 GiB; 32 GiB above; + 2 GiB for speculative decoding (6 GiB for a separate draft model, STANDALONE, from
  0.5.2); + 4 GiB with DP attention; fraction = round((gpu_mem - reserve) / gpu_mem, 3);
- a multimodal model: x 0.90 in 0.4.8-0.4.9, ``adjust_mem_fraction_for_vlm`` from 0.4.10;
- chunked prefill: 2048 under 35 GiB, 8192 under 160 GiB, 16384 above;
- CUDA-graph batch: 8 (tp < 4) or 80 under 35 GiB, else the graph runner's default capture list
  (``model_executor/cuda_graph_runner.py`` ``get_batch_sizes_to_capture``): up to 160, 256 above 90 GiB, 512 above
  160 GB. Pure Python."""

from __future__ import annotations

from mha_cli.core.engine.prefill_graphs import release_triple
from mha_cli.core.engine.sglang_reserve import SglangServing, vlm_factor
from mha_cli.core.targets import Target

GIB_MIB = 1024
TIERED_FROM = (0, 4, 8)
"""The first release with the tiered reserve (0.4.7 sets the fraction by tp alone)."""
FORMULA_FROM = (0, 5, 3)
"""The first release with the reserve formula of ``settings.sglang_default_fraction``."""
VLM_ADJUST_FROM = (0, 4, 10)
"""The first release whose multimodal fraction is ``adjust_mem_fraction_for_vlm`` (0.4.9: x 0.90)."""
STANDALONE_FROM = (0, 5, 2)
"""The first release reserving 6 GiB for a separate draft model (0.5.1: 2 GiB for any speculative algorithm)."""


def tiered_era(release: str | None, generation: str) -> bool:
    """Whether SGLang ``release`` (as typed; None: the ``generation``'s newest) sizes its pool by GPU tier."""
    triple = release_triple(release) if release else None
    if triple is None:  # no exact release: the generation's newest, 0.4.10.post2 for sglang-0.4, 0.5.23 for 0.5
        return generation == "sglang-0.4"
    return TIERED_FROM <= triple < FORMULA_FROM


def tiered_step_defaults(target: Target, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) of 0.4.8-0.5.2 on ``target`` at ``tp`` (the module docstring)."""
    gib = target.device_memory_bytes / 2**30
    if gib < 35:
        return 2048, 8 if tp < 4 else 80
    graph_bs = 512 if target.device_memory_bytes / 2**20 > 160 * 1000 else 256 if gib > 90 else 160
    return (8192 if gib < 160 else 16384), graph_bs


def tiered_fraction(
    target: Target, tp: int, release: str | None, *, dp_attention: bool, serving: SglangServing | None
) -> tuple[float, str]:
    """0.4.8-0.5.2's default ``mem_fraction_static`` on ``target`` at ``tp`` (the server's, every GPU of a replica),
    and the note naming its reserve."""
    gpu_mib = target.device_memory_bytes / 2**20
    gib = gpu_mib / GIB_MIB
    parallel = tp * (1 if serving is None else serving.pp)
    if gib < 35:
        reserve, tier = (2.8 + parallel / 10) * GIB_MIB, "(2.8 + tp x pp / 10) GiB"
    elif gib < 90:
        reserve, tier = (9.5 + parallel / 2) * GIB_MIB, "(9.5 + tp x pp / 2) GiB"
    elif gib < 160:
        reserve, tier = (12 + parallel / 2) * GIB_MIB, "(12 + tp x pp / 2) GiB"
    else:
        reserve, tier = 32 * GIB_MIB, "32 GiB"
    parts = [f"a reserve of {tier} for this GPU tier"]
    triple = release_triple(release) or (0, 4, 10)  # the generation's newest, 0.4.10.post2
    spec = None if serving is None else serving.speculative
    if spec is not None:
        standalone = spec.method == "draft_model" and triple >= STANDALONE_FROM
        reserve += (6 if standalone else 2) * GIB_MIB
        parts.append(f"+ {6 if standalone else 2} GiB for speculative decoding")
    if dp_attention:
        reserve += 4 * GIB_MIB
        parts.append("+ 4 GiB for DP attention")
    fraction = round((gpu_mib - reserve) / gpu_mib, 3)
    vision = None if serving is None else serving.model.vision
    if vision is not None:
        factor = vlm_factor(vision) if triple >= VLM_ADJUST_FROM else 0.90
        fraction *= factor
        parts.append(f"x {factor:.3f} for the vision tower")
    return fraction, f"; mem_fraction_static (server_args.py 0.4.8-0.5.2): {', '.join(parts)}"
