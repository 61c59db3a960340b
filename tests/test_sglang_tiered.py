"""SGLang 0.4.8-0.5.2's default fraction and step defaults by GPU tier (``core.engine.sglang_tiered``, read in the
wheels' ``server_args.py``), by hand, against the releases on either side: 0.4.7's fraction by tp alone and 0.5.3's
reserve formula."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.sglang_reserve import SglangServing
from mha_cli.core.engine.sglang_tiered import tiered_era, tiered_step_defaults
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import resolve_target

H100 = resolve_target("h100").target
RTX_5080 = resolve_target("rtx-5080").target
MIB = 2**20


def _fraction(release: str, target=H100, tp: int = 1, **serving) -> float:
    settings = resolve_settings(
        DeploymentSpec(
            engine="sglang", engine_version=release,
            engine_generation="sglang-0.4" if release.startswith("0.4") else "sglang-0.5",
        ), target, tp,
        serving=SglangServing(model=get_preset("qwen3-8b"), **serving),
    )  # fmt: skip
    return settings.utilisation


@pytest.mark.parametrize(
    ("release", "tiered"),
    [("0.4.7", False), ("0.4.8", True), ("0.4.10.post2", True), ("0.5.2", True), ("0.5.3", False)],
)
def test_the_tiered_era_is_0_4_8_to_0_5_2(release, tiered):
    generation = "sglang-0.4" if release.startswith("0.4") else "sglang-0.5"
    assert tiered_era(release, generation) is tiered


def test_an_h100_reserves_9_5_plus_half_the_parallel_size_gib():
    gpu = H100.device_memory_bytes / MIB  # 81,090 MiB
    assert _fraction("0.5.1") == round((gpu - (9.5 + 0.5) * 1024) / gpu, 3) == 0.874
    assert _fraction("0.5.1", tp=2) == round((gpu - (9.5 + 1) * 1024) / gpu, 3)
    assert _fraction("0.4.7") == 0.88  # the control before: by tp alone
    assert _fraction("0.5.3") != 0.874  # the control after: the reserve formula


def test_a_small_gpu_and_speculative_decoding_by_release():
    gpu = RTX_5080.device_memory_bytes / MIB
    assert _fraction("0.4.10", target=RTX_5080) == round((gpu - 2.9 * 1024) / gpu, 3)  # log 510's 0.818
    eagle, draft = SimpleNamespace(method="eagle3"), SimpleNamespace(method="draft_model")  # all the reserve reads
    h100 = H100.device_memory_bytes / MIB
    assert _fraction("0.5.1", speculative=eagle) == round((h100 - 12 * 1024) / h100, 3)  # + 2 GiB
    assert _fraction("0.5.1", speculative=draft) == round((h100 - 12 * 1024) / h100, 3)  # 0.5.1: any algorithm 2
    assert _fraction("0.5.2", speculative=draft) == round((h100 - 16 * 1024) / h100, 3)  # 0.5.2: STANDALONE 6


def test_step_defaults_by_tier():
    assert tiered_step_defaults(RTX_5080, 1) == (2048, 8)
    assert tiered_step_defaults(RTX_5080, 4) == (2048, 80)
    assert tiered_step_defaults(H100, 1) == (8192, 160)
    assert tiered_step_defaults(resolve_target("h200").target, 1) == (8192, 256)
    assert tiered_step_defaults(resolve_target("b200").target, 1) == (16384, 512)


def _settings(generation: str, release: str, target):
    deployment = DeploymentSpec(engine="sglang", engine_generation=generation, engine_version=release)
    return resolve_settings(deployment, target, 1, serving=SglangServing(model=get_preset("qwen3-8b")))


def test_a_release_the_generation_does_not_cover_takes_its_last_rules():
    """A 0.5.5 log priced by sglang-0.4's rules (``benchmarks/engine_logs.py``' control column) takes 0.4.10.post2's
    tiered reserve, (9.5 + 1 / 2) GiB of an H100's 81,090 MiB, not 0.4.0-0.4.7's 0.88 by tp (read as 0.5.5 was
    before); a 0.4.6 log priced by sglang-0.5's takes the newest read's (0.5.23) 24 GiB tier, 4,096 tokens and a
    48-request graph (0.5.20's ``handle_gpu_memory_settings``), not 0.5.3's 2,048 and 16, and its request pool without
    0.4.0-0.4.6's extra row (4,096, not 4,097)."""
    gpu = H100.device_memory_bytes / MIB
    old = _settings("sglang-0.4", "0.5.5", H100)
    assert old.utilisation == round((gpu - (9.5 + 0.5) * 1024) / gpu, 3) == 0.874  # was 0.88
    assert (old.max_num_batched_tokens, old.cuda_graph_bs) == (8192, 160)
    rtx_4090 = resolve_target("rtx-4090").target
    new = _settings("sglang-0.5", "0.4.6", rtx_4090)
    assert (new.max_num_batched_tokens, new.cuda_graph_bs) == (4096, 48)  # was (2048, 16)
    assert new.max_num_seqs == 4096  # was 4,097
    assert new.utilisation == _settings("sglang-0.5", "0.5.23", rtx_4090).utilisation == 0.699  # was 0.845
