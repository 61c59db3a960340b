"""SGLang's pool padding by release (``core.engine.sglang_padding``): a page from 0.4.4, one slot before; the plan's
"KV Cache is allocated" line counts it by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.sglang_padding import padding_slots
from mha_cli.core.kv import kv_footprint
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import rank_weight_bytes

ROOT = Path(__file__).parent.parent
GIB = 2**30


@pytest.mark.parametrize(
    ("page", "release", "slots"),
    [(64, "0.5.8", 64), (16, "0.4.4", 16), (16, "0.4.3.post4", 1), (1, "0.4.2", 1), (16, None, 16), (1, "0.5", 1)],
)
def test_padding_slots(page, release, slots):
    assert padding_slots(page, release) == slots


def _k_line(release: str) -> tuple[int, str]:
    model = load_source(str(ROOT / "tests/fixtures/hf_configs/qwen2.5-7b.json")).model
    target = resolve_target("h100-sxm").target
    generation = "sglang-0.4" if release.startswith("0.4") else "sglang-0.5"  # as --engine sglang@RELEASE sets it
    spec = DeploymentSpec(
        seq_len=8192, tp=1, engine="sglang", engine_generation=generation, engine_version=release, block_size=1024
    )
    kv = kv_footprint(model, seq_len=8192, kv_dtype="bf16", tp=1)
    plan = plan_engine(model, kv, target, resolve_settings(spec, target, 1),
                       weights_bytes_per_rank=rank_weight_bytes(model, 1, "bf16"), sequences_per_replica=1)  # fmt: skip
    return plan.kv_tokens, plan.log_lines[-1]


@pytest.mark.parametrize(("release", "padding"), [("0.4.4", 1024), ("0.4.3", 1)])
def test_the_k_size_line_pads_by_the_release(release, padding):
    """K = (tokens + padding) x 28 layers x 4 KV heads x 128 x 2 B (28,672 B a token), in GB as SGLang prints it; a
    page of 1,024 is 0.03 GiB, so the line tells the two paddings apart."""
    tokens, line = _k_line(release)
    assert tokens % 1024 == 0
    assert f"K size: {(tokens + padding) * 28_672 / GIB:.2f} GB" in line
    assert f"K size: {(tokens + 1025 - padding) * 28_672 / GIB:.2f} GB" not in line


@pytest.mark.parametrize("command", [["kv", "llama-3-8b"], ["kv", "llama-3-8b", "--target", "h100"],
                                     ["plan", "llama-3-8b", "--target", "h100", "--closed-form"]])  # fmt: skip
@pytest.mark.parametrize("release", ["0.4.3", "0.4.3.post4"])
def test_a_block_size_is_refused_on_a_release_without_page_size(cli, command, release):
    """``--block-size`` is SGLang's ``--page-size``, first in 0.4.4 (core.engine.flags: 0.4.4's ServerArgs.page_size,
    0.4.3.post4 lacks it): one line on an earlier release, as ``--kv-cache-gib`` on a vLLM without its flag; 0.4.4
    and the 0.4 line's latest take it."""
    result = cli.run(*command, "--engine", f"sglang@{release}", "--block-size", "16")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: --block-size sets SGLang's --page-size (first in 0.4.4), which SGLang {release} lacks: drop it or use"
        " --engine sglang@0.4.4 or later"
    )
    for taken in ("sglang@0.4.4", "sglang@0.4", "sglang"):
        assert cli.run(*command, "--engine", taken, "--block-size", "16").exit_code == 0, taken
