"""SGLang 0.5's default mem_fraction_static beyond its base reserve, by release (``core.engine.sglang_reserve``,
read in the 0.5.3-0.5.23 wheels): each reserve by hand at the release before it changes and at the one after.

Base on an H100 (81,090 MiB as torch counts it) at tp 1: 512 + 1.5 x 8192 + 2 x 256 + 1 x 1 / 8 x 1024 = 13,440 MiB."""

from __future__ import annotations

from mha_cli.core.dp_attention import dp_attention_experts
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.sglang_reserve import SglangServing, capture_sizes, sglang_reserve, vlm_factor
from mha_cli.core.schemas import DeploymentSpec, SpeculativeSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import load_targets

H100 = load_targets()["h100-sxm"]
MIB = H100.device_memory_bytes / 2**20
BASE = 13_440


def _model(name: str):
    return load_source(f"tests/fixtures/hf_configs/{name}.json").model


QWEN3_8B = _model("qwen3-8b")


def _fraction(release: str, serving: SglangServing, *, chunk: int | None = None, tp: int = 1) -> float:
    deployment = DeploymentSpec(engine="sglang", engine_version=release, max_num_batched_tokens=chunk)
    return resolve_settings(deployment, H100, tp, serving=serving).utilisation


def _spec(method: str) -> SpeculativeSpec:
    return SpeculativeSpec(
        method=method, num_speculative_tokens=3, acceptance_length=2.0, acceptance_source="test", drafter=QWEN3_8B,
        drafter_is_model=method == "draft_model",
    )  # fmt: skip


def _by_hand(reserved_mib: float) -> float:
    return round((MIB - reserved_mib) / MIB, 3)


def test_capture_sizes_count_58_at_an_8192_token_chunk():
    assert len(capture_sizes(8192)) == 58 and capture_sizes(8192)[-1] == 8192
    assert len(capture_sizes(16384)) == 74 and len(capture_sizes(2048)) == 42


def test_prefill_graph_reserve_from_0_5_10():
    """0.5.9 captures no prefill graph by default: the base alone; 0.5.10 adds 58 sizes x 8 MiB = 464 MiB."""
    plain = SglangServing(QWEN3_8B)
    assert _fraction("0.5.9", plain) == _by_hand(BASE)
    assert _fraction("0.5.10", plain) == _by_hand(BASE + 464) < _fraction("0.5.9", plain)
    # a multimodal model turns 0.5.10's graphs off (_handle_piecewise_cuda_graph): no graph reserve
    assert sglang_reserve(SglangServing(_model("gemma-3-4b-it")), "sglang-0.5", "0.5.10", "NVIDIA", tp=1,
                          chunk=8192, graph_bs=256, dp=1).under_floor_mib == 0  # fmt: skip
    # not on AMD (is_hip turns them off)
    assert sglang_reserve(plain, "sglang-0.5", "0.5.10", "AMD", tp=1, chunk=8192, graph_bs=256, dp=1).parts == ()


def test_mla_prefill_graph_reserve_once_breakable_graphs_take_mla_in_0_5_18():
    """An MLA model turns 0.5.17's breakable graphs off (no reserve); 0.5.18 keeps them: 1.5 GiB flat."""
    mla = SglangServing(_model("deepseek-v2-lite"))
    assert _fraction("0.5.17", mla) == _by_hand(BASE)
    assert _fraction("0.5.18", mla) == _by_hand(BASE + 1536)


def test_speculative_reserve_above_the_floor_until_0_5_13():
    """EAGLE: 2 GiB in 0.5.9, 4 GiB in 0.5.10-0.5.13 (its target still captured from 0.5.11), none from 0.5.14; a
    separate draft model 6 GiB. Added after the 10 GiB floor: a 2048-token chunk (4,224 MiB + 42 sizes x 8) is
    floored to 10,240 first."""
    eagle = SglangServing(QWEN3_8B, speculative=_spec("eagle3"))
    assert _fraction("0.5.9", eagle) == _by_hand(BASE + 2048)
    assert _fraction("0.5.10", eagle) == _by_hand(BASE + 4096)  # 0.5.10: speculative decoding turns graphs off
    assert _fraction("0.5.13", eagle) == _by_hand(BASE + 464 + 4096)
    assert _fraction("0.5.14", eagle) == _by_hand(BASE + 464)
    assert _fraction("0.5.13", eagle, chunk=2048) == _by_hand(10_240 + 4096)
    draft = SglangServing(QWEN3_8B, speculative=_spec("draft_model"))
    assert _fraction("0.5.13", draft) == _by_hand(BASE + 464 + 6144)


def test_dp_attention_reserve_and_graphs_it_keeps_from_0_5_17():
    """Graph batch x dp x 3 (x 4.5 above 300) under the floor; DP attention turns the breakable prefill graphs off
    in 0.5.16, not in 0.5.17 (a non-MLA MoE model: 58 sizes x 8 MiB)."""
    moe = _model("qwen3-235b-a22b-instruct-2507")
    serving = SglangServing(moe, experts=dp_attention_experts(1, 8))
    at = {
        release: sglang_reserve(serving, "sglang-0.5", release, "NVIDIA", tp=8, chunk=8192, graph_bs=256, dp=8)
        for release in ("0.5.16", "0.5.17")
    }
    assert at["0.5.16"].under_floor_mib == 256 * 8 * 3
    assert at["0.5.17"].under_floor_mib == 256 * 8 * 3 + 464
    big = sglang_reserve(serving, "sglang-0.5", "0.5.3", "NVIDIA", tp=8, chunk=8192, graph_bs=512, dp=8)
    assert big.under_floor_mib == 512 * 8 * 4.5


def test_deepep_reserves_from_0_5_15_and_0_5_17():
    """DeepEP: nothing in 0.5.14; 2 GiB above the floor from 0.5.15 (its a2a backend keeps the breakable graphs off
    until 0.5.16); from 0.5.17 the graphs stay on, with 1 GiB more for them under the floor."""
    serving = SglangServing(_model("qwen3-235b-a22b-instruct-2507"), experts=dp_attention_experts(1, 8, "deepep"))

    def reserve(release: str):
        return sglang_reserve(serving, "sglang-0.5", release, "NVIDIA", tp=8, chunk=8192, graph_bs=256, dp=8)

    dp_part = 256 * 8 * 3
    assert (reserve("0.5.14").under_floor_mib, reserve("0.5.14").over_floor_mib) == (dp_part, 0)
    assert (reserve("0.5.16").under_floor_mib, reserve("0.5.16").over_floor_mib) == (dp_part, 2048)
    assert (reserve("0.5.17").under_floor_mib, reserve("0.5.17").over_floor_mib) == (dp_part + 464 + 1024, 2048)


def test_pp_counts_in_the_parallel_term():
    """tp x pp / 8 x 1024: pp 2 at tp 1 adds 128 MiB; 0.5.18's breakable graphs run at pp > 1, 0.5.19's do not."""
    staged = SglangServing(QWEN3_8B, pp=2)
    assert _fraction("0.5.18", staged) == _by_hand(BASE + 128 + 464)
    assert _fraction("0.5.19", staged) == _by_hand(BASE + 128)


def test_vision_tower_scales_the_fraction():
    """adjust_mem_fraction_for_vlm: x 0.95 x (1 - 0.1 x (layers x width**2 / (24 x 1024**2) - 1)), within 0.8-1.05.
    Gemma 3's SigLIP: 27 x 1152**2 -> 0.95 x 0.9576; Qwen3.5's tower names its layers depth: SGLang prices 24, and
    its 1024 width gives the baseline, x 0.95."""
    gemma = _model("gemma-3-4b-it")
    assert round(vlm_factor(gemma.vision), 4) == round(0.95 * (1 - 0.1 * (27 * 1152**2 / (24 * 1024**2) - 1)), 4)
    assert vlm_factor(_model("qwen3.5-4b").vision) == 0.95
    fraction = _fraction("0.5.10", SglangServing(gemma))  # graphs off for a multimodal model in 0.5.10
    assert fraction == _by_hand(BASE) * vlm_factor(gemma.vision)


def test_no_model_known_keeps_the_base_reserve():
    """A table of defaults with no model (serving None) prices the base reserve alone."""
    deployment = DeploymentSpec(engine="sglang", engine_version="0.5.13")
    assert resolve_settings(deployment, H100, 1).utilisation == _by_hand(BASE)
