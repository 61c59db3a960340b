"""vLLM's step defaults by device tier, each against what ``EngineArgs.get_batch_defaults`` reads (``engine/
arg_utils.py``): the GB10 held on the small tier, the A100 from 0.9, and the 160 GiB tier's first release (0.28)."""

from __future__ import annotations

from mha_cli.core.byte_units import GIB
from mha_cli.core.engine.cuda_graphs import cuda_graph_estimate
from mha_cli.core.engine.generations import generation_of
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

GB10 = resolve_target("gb10").target


def _steps(target, engine: str = "vllm") -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) at vLLM's defaults, ``engine`` as ``--engine`` takes it."""
    version = engine.split("@", 1)[1] if "@" in engine else None
    spec = DeploymentSpec(engine="vllm", engine_generation=generation_of(engine).id, engine_version=version)
    settings = resolve_settings(spec, target, 1)
    return settings.max_num_batched_tokens, settings.max_num_seqs


def test_gb10_is_on_the_small_tier_in_every_vllm_generation():
    """119.70 GiB, not an A100: memory alone would give 8,192 tokens and 1,024 sequences. vLLM reads 0 GiB up to
    0.32 (NVML's memory query is not supported on a GB10, and the exception falls back to 0) and keeps compute
    capability 12.1 small from 0.33: 2,048 and 256 at V1, at 0.27.1 (logs 613, 1005, 1008) and at the latest."""
    assert GB10.device_memory_bytes >= 70 * GIB and GB10.compute_capability == 12.1
    for engine in ("vllm-v1", "vllm@0.27.1", "vllm@0.32.0", "vllm"):
        assert _steps(GB10, engine) == (2048, 256), engine
    note = resolve_settings(DeploymentSpec(), GB10, 1).defaults_note
    assert "on a GB10" in note and "0.33" in note


def test_the_gb10_rule_is_the_capability_not_the_memory():
    """The same device read as capability 12.0 (an RTX PRO 6000's) is a large GPU again: 8,192 and 1,024; the RTX
    PRO 6000 itself (12.0, 94.97 GiB) keeps them."""
    as_12_0 = GB10.model_copy(update={"id": "gb10-as-12.0", "compute_capability": 12.0})
    assert _steps(as_12_0) == (8192, 1024)
    assert _steps(resolve_target("rtx-pro-6000-ws").target) == (8192, 1024)


def test_gb10_decode_graphs_stop_at_256_sequences():
    """At the GB10's 256 sequences the capture sizes run to min(2 x 256, 512) = 512 tokens: 1, 2, 4, then 8 to 256
    by 8 (32) and 272 to 512 by 16 (16): 51 PIECEWISE sizes, of which the 35 of at most 256 are FULL decode sizes,
    as log 1008 prints ('PIECEWISE=51 (largest=512), FULL=35 (largest=256)')."""
    tokens, seqs = _steps(GB10, "vllm@0.27.1")
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model
    estimate = cuda_graph_estimate(model, GB10, tp=1, max_num_seqs=seqs, max_num_batched_tokens=tokens)
    assert (estimate.largest_size, estimate.piecewise_graphs, estimate.full_graphs) == (512, 51, 35)


def test_the_160_gib_tier_starts_at_0_28():
    """A B200 (>= 160 GiB): 16,384 tokens and 1,024 sequences from 0.28.0 (and at the latest); 0.21.0 and 0.27.1 have
    no such tier, so 8,192 and 1,024. An H200 (139.8 GiB) is below it at every release."""
    b200 = resolve_target("b200").target
    assert b200.device_memory_bytes >= 160 * GIB
    assert _steps(b200, "vllm@0.27.1") == _steps(b200, "vllm@0.21.0") == (8192, 1024)
    assert _steps(b200, "vllm@0.28.0") == _steps(b200, "vllm") == (16384, 1024)
    assert _steps(resolve_target("h200").target, "vllm@0.28.0") == (8192, 1024)


def test_the_a100_name_check_starts_at_0_9():
    """An A100 80GB (79.14 GiB) passes the 70 GiB test: vLLM 0.8.5's ``_set_default_args_v1`` gives it 8,192 tokens
    and 1,024 sequences; from 0.9.0 ``"a100" not in device_name`` keeps it on 2,048 and 256 (vllm-project/vllm#17885),
    through 0.20 and in the latest. An H100 is on the large tier either side."""
    a100, h100 = resolve_target("a100").target, resolve_target("h100").target
    assert a100.device_memory_bytes >= 70 * GIB
    assert _steps(a100, "vllm@0.8.5") == (8192, 1024)
    for engine in ("vllm@0.9.0", "vllm@0.10.2", "vllm-v1", "vllm"):
        assert _steps(a100, engine) == (2048, 256), engine
    assert _steps(h100, "vllm@0.8.5") == _steps(h100, "vllm@0.9.0") == (8192, 1024)


def test_a_release_the_generation_does_not_cover_takes_its_last_rules():
    """A vLLM 0.2 log priced by vllm-v1's rules (``benchmarks/engine_logs.py``' control column) is priced at 0.20's
    defaults, not 0.2's: an A100 stays on 2,048 and 256, as at vllm-v1's last release."""
    a100 = resolve_target("a100").target
    spec = DeploymentSpec(engine="vllm", engine_generation="vllm-v1", engine_version="0.2")
    settings = resolve_settings(spec, a100, 1)
    assert (settings.max_num_batched_tokens, settings.max_num_seqs) == (2048, 256)


def test_vllm_0_8_0_to_0_8_4_go_by_device_name():
    """``_set_default_args_v1`` in the 0.8.0-0.8.4 wheels: 8,192 tokens on a device named H100/H200, else 2,048;
    1,024 sequences everywhere in 0.8.0-0.8.3, 256 off an H100/H200 in 0.8.4; from 0.8.5 the 70 GiB memory test (an
    A100 80GB then takes 8,192 and 1,024, a 94 GiB H20 too)."""
    h100, h200 = resolve_target("h100").target, resolve_target("h200").target
    a100, h20, l4 = (resolve_target(name).target for name in ("a100", "h20", "l4"))
    for release in ("0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.8.4"):
        assert _steps(h100, f"vllm@{release}") == _steps(h200, f"vllm@{release}") == (8192, 1024), release
    for release in ("0.8.0", "0.8.3"):
        assert _steps(a100, f"vllm@{release}") == _steps(h20, f"vllm@{release}") == (2048, 1024), release
        assert _steps(l4, f"vllm@{release}") == (2048, 1024), release
    assert _steps(a100, "vllm@0.8.4") == _steps(h20, "vllm@0.8.4") == _steps(l4, "vllm@0.8.4") == (2048, 256)
    assert _steps(a100, "vllm@0.8.5") == _steps(h20, "vllm@0.8.5") == (8192, 1024)
    assert _steps(l4, "vllm@0.8.5") == (2048, 256)
