"""vLLM >= 0.21's CUDA-graph estimate (``core.engine.cuda_graphs``): capture sizes and graph counts as vLLM 0.32's
source sets them, and the estimate counted by hand."""

import pytest

from mha_cli.cli.app import app
from mha_cli.core.engine.cuda_graphs import (
    MIN_PER_GRAPH,
    PER_LAYER_GRAPH_BYTES,
    capture_sizes,
    cuda_graph_estimate,
    full_decode_sizes,
    largest_default_for,
    v1_full_decode_sizes,
    v1_spec_decode_sizes,
)  # fmt: skip
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

GIB = 2**30
H100 = resolve_target("h100").target


def test_default_capture_sizes():
    """``_set_cudagraph_sizes``: 1, 2, 4, multiples of 8 below 256, of 16 from 256, up to min(2 x max_num_seqs, 512)
    and max_num_batched_tokens; the step's and the decode batch's sizes added when they fit."""
    sizes = capture_sizes(256, 2048)
    assert sizes == [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)] and len(sizes) == 3 + 31 + 17 == 51
    assert capture_sizes(1024, 8192) == sizes  # 1,024 sequences do not fit under 512: not added
    assert capture_sizes(8, 8192) == [1, 2, 4, 8, 16]  # 2 x 8 sequences
    assert capture_sizes(100, 100) == [1, 2, 4, *range(8, 100, 8), 100]  # the step of 100 tokens added
    assert capture_sizes(5, 8192) == [1, 2, 4, 5, 8]  # the decode batch of 5 added
    blackwell = capture_sizes(1024, 16384, largest_default=1024)
    assert blackwell[-1] == 1024 and len(blackwell) == 3 + 31 + 49


def test_per_layer_bytes_read_off_log_409():
    """Log 409 (engine_logs.yaml, not priced there): Qwen2.5-7B, 28 layers, 0.48 GiB at vllm serve's small-GPU
    defaults (256 sequences): (0.48 GiB - the forward at 512 tokens) / (84 further graphs x 28 layers). The preset
    gives it back within the log's rounding."""
    first = 512 * 2 * (2 * 3584 + 3 * 18944)
    assert PER_LAYER_GRAPH_BYTES == (round(0.48 * GIB) - first) // (84 * 28) == 191_267
    target = resolve_target("rtx-a5000").target
    estimate = cuda_graph_estimate(
        get_preset("qwen2.5-7b"), target, tp=1, max_num_seqs=256, max_num_batched_tokens=2048
    )
    assert estimate.first_capture_bytes == first and (estimate.piecewise_graphs, estimate.full_graphs) == (51, 35)
    assert abs(estimate.bytes / GIB - 0.48) < 0.005


def test_small_model_by_hand_on_an_h100():
    """Qwen3-0.6B (28 layers, d_model 1,024, d_ff 3,072) at an H100's defaults (8,192 tokens, 1,024 sequences): 51
    sizes up to 512, every one a FULL decode size too (all <= 1,024): first capture 512 x 2 B x (2 x 1,024 + 3 x
    3,072) = 11,534,336 B, then (50 + 50) graphs x 28 x 191,267 B = 535,547,600 B."""
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model
    estimate = cuda_graph_estimate(model, H100, tp=1, max_num_seqs=1024, max_num_batched_tokens=8192)
    assert (estimate.piecewise_graphs, estimate.full_graphs, estimate.largest_size) == (51, 51, 512)
    assert estimate.first_capture_bytes == 11_534_336 and estimate.per_graph_bytes == 28 * 191_267
    assert estimate.bytes == 11_534_336 + 100 * 28 * 191_267 == 547_081_936


def test_tensor_parallel_shards_the_first_capture_only():
    """At tp 2 each rank's graph pool holds half the MLP's width; the graphs (one per layer per size) are as many."""
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model
    one = cuda_graph_estimate(model, H100, tp=1, max_num_seqs=256, max_num_batched_tokens=2048)
    two = cuda_graph_estimate(model, H100, tp=2, max_num_seqs=256, max_num_batched_tokens=2048)
    assert two.first_capture_bytes == 512 * 2 * (2 * 1024 + 3 * 3072 // 2)
    assert one.bytes - two.bytes == one.first_capture_bytes - two.first_capture_bytes > 0


def test_a_shallow_model_pays_the_1_mib_floor():
    """``profile_cudagraph_memory`` counts at least 1 MiB a graph: 2 layers x 191,267 B is under it."""
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model.model_copy(update={"n_layers": 2})
    estimate = cuda_graph_estimate(model, H100, tp=1, max_num_seqs=8, max_num_batched_tokens=8192)
    assert estimate.per_graph_bytes == MIN_PER_GRAPH
    assert estimate.bytes == estimate.first_capture_bytes + (5 - 1 + 4 - 1) * MIN_PER_GRAPH


def test_data_center_blackwell_captures_up_to_1024():
    """On a device of capability 10.x the default ceiling is 1,024 (``is_device_capability_family(100)``): a B200 at
    its defaults (16,384 tokens, 1,024 sequences) captures 83 sizes, each also a FULL decode size."""
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model
    estimate = cuda_graph_estimate(
        model, resolve_target("b200").target, tp=1, max_num_seqs=1024, max_num_batched_tokens=16384
    )
    assert (estimate.largest_size, estimate.piecewise_graphs, estimate.full_graphs) == (1024, 83, 83)


def test_speculative_decoding_widens_the_capture_sizes():
    """``_set_cudagraph_sizes`` with k speculative tokens: a decode request is q = 1 + k tokens, the ceiling
    min(2 x q x max_num_seqs, 512), and q x n appended for the request counts n (1, 2, 4, the 8- and 16-steps, up
    to max_num_seqs) that fit under it. 16 sequences at k = 3: 128 tokens (32 without), 19 sizes (7 without)."""
    plain = capture_sizes(16, 8192)
    assert plain == [1, 2, 4, 8, 16, 24, 32]
    widened = capture_sizes(16, 8192, query_len=4)
    assert widened == [1, 2, 4, *range(8, 129, 8)] and len(widened) == 19  # q x n (4, 8, 16, 32, 64): on the grid
    # 256 sequences at k = 2 (q = 3): the 512 ceiling holds; 3 x (1, 2, 4, 88, 104, ..., 168) are off the grid
    sizes = capture_sizes(256, 8192, query_len=3)
    assert sizes[-1] == 512 and {3, 6, 12, 264, 312, 360, 408, 456, 504} <= set(sizes)
    assert len(sizes) == 51 + 9 and 510 not in sizes  # 3 x 170 is not a request count of the grid


def test_speculative_decoding_rounds_the_full_decode_graphs_to_q():
    """V2's ``ModelCudaGraphManager._init_candidates``: each capture size rounded up to a multiple of q, kept up to
    q x max_num_seqs and the largest size; the duplicates are one graph. 16 sequences at q = 4: 4, 8, 16, ..., 64."""
    assert full_decode_sizes(capture_sizes(16, 8192), 16) == [1, 2, 4, 8, 16]
    assert full_decode_sizes(capture_sizes(16, 8192, query_len=4), 16, 4) == [4, *range(8, 65, 8)]
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model
    plain = cuda_graph_estimate(model, H100, tp=1, max_num_seqs=16, max_num_batched_tokens=8192)
    spec = cuda_graph_estimate(model, H100, tp=1, max_num_seqs=16, max_num_batched_tokens=8192, speculative_tokens=3)
    assert (plain.largest_size, plain.piecewise_graphs, plain.full_graphs) == (32, 7, 5)
    assert (spec.largest_size, spec.piecewise_graphs, spec.full_graphs, spec.query_len) == (128, 19, 9, 4)
    assert spec.bytes == 128 * 2 * (2 * 1024 + 3 * 3072) + (18 + 8) * 28 * PER_LAYER_GRAPH_BYTES
    assert "decode steps of 4 tokens a request" in spec.how


def test_the_plan_prices_the_speculative_graphs_and_says_the_drafters_are_not():
    """``mha plan --speculative-config`` reaches the graph estimate through the deployment (``plan_memory``): k = 3
    on an H100 at vLLM's defaults gives decode graphs of 4 tokens a request, and a note that the drafter's graphs
    are not priced."""
    from mha_cli.core.memory import plan_memory
    from mha_cli.core.speculative import build_spec

    source = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json")
    target = resolve_target("h100")
    kv = kv_footprint(source.model, seq_len=4096)
    spec = build_spec(source.model, origin=source.origin, kind=source.kind, method="eagle", num_speculative_tokens=3)
    deployment = DeploymentSpec(engine="vllm")
    plain = plan_memory(target, model=source.model, kv=kv, weight_dtype="bf16", deployment=deployment).engine
    with_spec = plan_memory(
        target, model=source.model, kv=kv, weight_dtype="bf16",
        deployment=deployment.model_copy(update={"speculative": spec}),
    ).engine  # fmt: skip
    assert plain.cuda_graph_estimate.query_len == 1 and with_spec.cuda_graph_estimate.query_len == 4
    # 1,024 sequences: the same 51 sizes (4 x n is on the grid), but 1, 2 and 4 round to one FULL graph of 4 tokens
    assert (plain.cuda_graph_estimate.full_graphs, with_spec.cuda_graph_estimate.full_graphs) == (51, 49)
    assert plain.cuda_graph_bytes - with_spec.cuda_graph_bytes == 2 * 28 * PER_LAYER_GRAPH_BYTES
    assert any("drafter's own graphs" in note for note in with_spec.notes)
    assert not any("drafter's own graphs" in note for note in plain.notes)


@pytest.mark.parametrize("target_id", ["tpu-v5e", "m4-max", "gaudi3"])
def test_no_graph_estimate_where_vllm_profiles_none(target_id):
    """vLLM 0.32's ``determine_available_memory`` profiles CUDA graphs only where ``is_cuda_alike() or is_xpu()``:
    on a TPU, an Apple GPU or a Gaudi (HPU) no graph line, no graph bytes, and a note saying why."""
    plan = _plan(target_id)
    assert plan.cuda_graph_estimate is None and plan.cuda_graph_bytes == 0
    assert not any(line.label.startswith("CUDA graphs") for line in plan.budget)
    assert any("profiles CUDA-graph memory only on CUDA, ROCm and Intel XPU" in note for note in plan.notes)
    assert _plan("mi300x").cuda_graph_estimate is not None  # ROCm: cuda-alike
    gaudi_said = any("an Intel target is priced as Gaudi, a HPU" in note for note in plan.notes)
    assert gaudi_said == (target_id == "gaudi3")  # Intel is named among the profiled: the note says why not here


def test_a_target_file_with_capability_10_captures_up_to_1024(tmp_path):
    """The 1,024 ceiling follows the device's compute capability (``is_device_capability_family(100)``), not the
    table's ids: a target file describing a B200 (capability 10.0) gets it, one of capability 9.0 512 (a file that
    left it out got 512 too, and a guessed sampler: refused since trial 309 #1)."""
    body = (
        "name: My B200\nvendor: NVIDIA\nmemory_gb: 180\nmemory_bandwidth_gbs: 8000\nbf16_tflops_dense: 2250\n"
        "source: NVIDIA B200 datasheet\n"
    )
    with_capability, without = tmp_path / "my-b200.yaml", tmp_path / "hopper.yaml"
    with_capability.write_text(body + "compute_capability: 10.0\n")
    without.write_text(body + "compute_capability: 9.0\n")
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model

    def largest(path) -> int:
        target = resolve_target(str(path)).target
        return cuda_graph_estimate(model, target, tp=1, max_num_seqs=1024, max_num_batched_tokens=16384).largest_size

    assert resolve_target(str(with_capability)).target.compute_capability == 10.0
    assert (largest(with_capability), largest(without)) == (1024, 512)
    assert resolve_target("b300").target.compute_capability == 10.3 and largest("b300") == 1024
    assert resolve_target("rtx-5090").target.compute_capability == 12.0 and largest("rtx-5090") == 512


def _plan(target_id: str, generation: str | None = None):
    model = get_preset("qwen2.5-7b")
    target = resolve_target(target_id).target
    kv = kv_footprint(model, seq_len=4096)
    settings = resolve_settings(DeploymentSpec(engine="vllm", engine_generation=generation), target, 1)
    return plan_engine(model, kv, target, settings, weights_bytes_per_rank=2 * GIB, sequences_per_replica=1)


def test_no_graphs_on_a_cpu_and_the_fixed_price_before_021():
    """vLLM's CPU backend captures no CUDA graphs: no estimate, no budget line; 0.8-0.20 keep the fixed 1 GiB
    outside the budget."""
    cpu = _plan("cpu")
    assert cpu.cuda_graph_bytes == 0 and cpu.cuda_graph_estimate is None and not cpu.cuda_graph_in_budget
    assert not any(line.label.startswith("CUDA graphs") for line in cpu.budget)
    older = _plan("h100", "vllm-v1")
    assert older.cuda_graph_bytes == GIB and older.cuda_graph_estimate is None
    latest = _plan("h100")
    assert latest.cuda_graph_estimate is not None and latest.cuda_graph_bytes == latest.cuda_graph_estimate.bytes


def test_a_pool_set_outright_leaves_the_graphs_outside_the_budget(cli, tmp_path):
    """vLLM 0.32's ``determine_available_memory`` returns ``kv_cache_memory_bytes`` before it calls
    ``profile_cudagraph_memory``: with --kv-cache-gib the graphs are captured after the pool, outside any budget.
    The estimate still says how much they take; the table shows it as the line outside."""
    model = get_preset("qwen2.5-7b")
    kv = kv_footprint(model, seq_len=4096)
    settings = resolve_settings(DeploymentSpec(engine="vllm", kv_cache_memory_bytes=20 * GIB), H100, 1)
    plan = plan_engine(model, kv, H100, settings, weights_bytes_per_rank=2 * GIB, sequences_per_replica=1)
    assert plan.generation == "vllm-0.21" and plan.available_kv_bytes == 20 * GIB
    assert not plan.cuda_graph_in_budget and not any(line.label.startswith("CUDA graphs") for line in plan.budget)
    assert plan.cuda_graph_estimate is not None and plan.cuda_graph_bytes == plan.cuda_graph_estimate.bytes
    config = tmp_path / "pool-set.yaml"
    config.write_text(
        "model: {d_model: 512, n_layers: 8, attention: {n_heads: 8}, block: {d_ff: 1536}, embeddings: {vocab_size:"
        " 1000}}\ndeployment: {target: h100, engine: vllm, kv_cache_memory_bytes: 4294967296}\n"
    )
    shown = cli.runner.invoke(app, ["kv", str(config)], env={"COLUMNS": "250"})  # the "from" column unwrapped
    assert shown.exit_code == 0, shown.output
    outside = next(line for line in shown.stdout.splitlines() if "CUDA graphs (outside)" in line)
    assert "vLLM skips its estimate when the pool is set" in outside


def test_a_full_utilisation_note_names_only_what_needs_the_headroom():
    """At utilisation 0.999 (81 MiB left on an H100) 0.21's graphs are already in the budget: the note names the CUDA
    context alone; 0.8-0.20 still take them from the headroom. vLLM's CPU backend has neither graphs nor a CUDA
    context: no note, and nothing about --enforce-eager."""
    model = get_preset("qwen2.5-7b")
    kv = kv_footprint(model, seq_len=4096)

    def notes(target, generation=None):
        deployment = DeploymentSpec(engine="vllm", engine_generation=generation, gpu_memory_utilization=0.999)
        settings = resolve_settings(deployment, target, 1)
        plan = plan_engine(model, kv, target, settings, weights_bytes_per_rank=2 * GIB, sequences_per_replica=1)
        return [note for note in plan.notes if "outside the budget" in note]

    latest, older = notes(H100), notes(H100, "vllm-v1")
    assert len(latest) == 1 and "CUDA context needs it" in latest[0] and "CUDA graphs" not in latest[0]
    assert len(older) == 1 and "CUDA graphs (about 1.0 GiB)" in older[0] and "--enforce-eager" in older[0]
    assert notes(resolve_target("cpu").target) == notes(resolve_target("cpu").target, "vllm-v1") == []


def _qwen3_plan(version: str | None, config: str = "qwen3-8b.json", utilisation: float | None = None):
    """Qwen3-8B (or ``config``) at 4,096 tokens on an H100 under vLLM ``version`` (None: the latest read, 0.32)."""
    model = load_source(f"tests/fixtures/hf_configs/{config}").model
    kv = kv_footprint(model, seq_len=4096)
    deployment = DeploymentSpec(engine="vllm", engine_version=version, gpu_memory_utilization=utilisation)
    settings = resolve_settings(deployment, H100, 1)
    return plan_engine(model, kv, H100, settings, weights_bytes_per_rank=16 * GIB, sequences_per_replica=1)


@pytest.mark.parametrize(("version", "in_budget"), [("0.21.0", True), ("0.24.0", False), ("0.27.1", False),
                                                    ("0.28.0", False), ("0.29.0", True), ("0.30.0", True),
                                                    (None, True)])  # fmt: skip
def test_model_runner_v2_sets_no_graphs_aside_before_029(version, in_budget):
    """A dense Qwen3 runs on Model Runner V2 from 0.24 (``core.engine.model_runner``), whose
    ``profile_cudagraph_memory`` returns 0 in 0.22-0.28 and measures the graphs from 0.29: before 0.29 no graph line
    in the budget, the pool larger by exactly the same graphs, which stay the plan's figure (taken after the pool)."""
    plan = _qwen3_plan(version)
    graphs = plan.cuda_graph_estimate
    assert graphs is not None and plan.cuda_graph_bytes == graphs.bytes > 0
    assert plan.cuda_graph_in_budget == graphs.before_pool == in_budget
    lines = [line for line in plan.budget if line.label.startswith("CUDA graphs")]
    assert [line.bytes for line in lines] == ([-graphs.bytes] if in_budget else [])
    assert plan.available_kv_bytes == sum(line.bytes for line in plan.budget[:-1])
    said = [note for note in plan.notes if "Model Runner V2 (vLLM 0.22-0.28) estimates no" in note]
    assert len(said) == (0 if in_budget else 1)
    if not in_budget:  # the same plan at 0.29 differs by the graph line only (same sampler path, 2 B a logit)
        at_029 = _qwen3_plan("0.29.0")
        if version in ("0.27.1", "0.28.0"):
            assert plan.available_kv_bytes - at_029.available_kv_bytes == graphs.bytes == at_029.cuda_graph_bytes


def test_the_v1_runner_still_estimates_at_027():
    """Qwen3-235B-A22B (an unlisted MoE) stays on the V1 runner until 0.29, whose estimate 0.21+ subtract: its graph
    line is in 0.27's budget."""
    plan = _qwen3_plan("0.27.1", "qwen3-235b-a22b-instruct-2507.json")
    assert plan.cuda_graph_in_budget and plan.cuda_graph_estimate is not None
    assert plan.cuda_graph_estimate.before_pool
    assert any(line.label == "CUDA graphs (estimated before the pool)" for line in plan.budget)


def test_v2_graphs_outside_are_shown_and_weighed_against_the_headroom(cli, tmp_path):
    """0.27's V2 graphs come out of the (1 - utilisation) headroom: the table shows them as the line outside, and a
    utilisation that leaves less than them and the CUDA context is said so."""
    tight = _qwen3_plan("0.27.1", utilisation=0.995)
    note = next(note for note in tight.notes if "outside the budget" in note)
    assert "CUDA graphs (about" in note and "--enforce-eager" in note
    config = tmp_path / "v2.yaml"
    config.write_text(
        "model: {d_model: 512, n_layers: 8, attention: {n_heads: 8}, block: {d_ff: 1536}, embeddings: {vocab_size:"
        " 1000}}\ndeployment: {target: h100}\n"
    )
    shown = cli.runner.invoke(app, ["kv", str(config), "--engine", "vllm@0.27.1"], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    outside = next(line for line in shown.stdout.splitlines() if "CUDA graphs (outside)" in line)
    assert "Model Runner V2 < 0.29 estimates none" in outside


def test_the_v1_runner_rounds_its_capture_sizes_to_q():
    """V1's ``adjust_cudagraph_sizes_for_spec_decode`` (0.21-0.32), counted by hand. 16 sequences at k = 2 (q = 3):
    the sizes are 1, 2, 4, 8, 16, 24, ..., 96 and 3, 6, 12 (18); rounded up to 3 and kept up to 96: 3, 6, 9, 12, 18,
    24, 33, 42, 48, 57, 66, 72, 81, 90, 96 (15 PIECEWISE graphs); FULL from 3 to 48: 3 ... 48 (9), which V2 reaches
    by rounding its 18 sizes instead. At 256 sequences the largest, 512, rounds to 513 and drops: 504 is the last."""
    sizes = capture_sizes(16, 8192, query_len=3)
    assert len(sizes) == 18
    v1 = v1_spec_decode_sizes(sizes, 3)
    assert v1 == [3, 6, 9, 12, 18, 24, 33, 42, 48, 57, 66, 72, 81, 90, 96]
    assert v1_full_decode_sizes(v1, 16, 3) == [3, 6, 9, 12, 18, 24, 33, 42, 48] == full_decode_sizes(sizes, 16, 3)
    assert v1_spec_decode_sizes(sizes, 1) == sizes
    assert v1_spec_decode_sizes(capture_sizes(256, 8192, query_len=3), 3)[-1] == 504
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model
    knobs = {"tp": 1, "max_num_seqs": 16, "max_num_batched_tokens": 8192, "speculative_tokens": 2}
    v2_graphs = cuda_graph_estimate(model, H100, **knobs)
    v1_graphs = cuda_graph_estimate(model, H100, **knobs, v1_runner=True)
    assert (v2_graphs.piecewise_graphs, v2_graphs.full_graphs) == (18, 9)
    assert (v1_graphs.largest_size, v1_graphs.piecewise_graphs, v1_graphs.full_graphs) == (96, 15, 9)
    assert v1_graphs.bytes == v2_graphs.bytes - 3 * v1_graphs.per_graph_bytes
    big = {**knobs, "max_num_seqs": 256}
    assert cuda_graph_estimate(model, H100, **big, v1_runner=True).largest_size == 504
    assert cuda_graph_estimate(model, H100, **big).largest_size == 512


def test_the_v1_runner_refuses_a_decode_step_past_its_largest_size():
    """vLLM raises "No valid cudagraph sizes after rounding": one line, not a traceback."""
    with pytest.raises(BadInputError, match="multiple of 9"):
        v1_spec_decode_sizes([1, 2, 4, 8], 9)
    assert v1_spec_decode_sizes([1, 2, 4, 5], 5) == [5]


def test_capture_sizes_by_release():
    """``_set_cudagraph_sizes`` (``config/vllm.py``) by release, read in the 0.21.0-0.33.0 wheels: max_num_seqs is a
    size at q = 1 from 0.31 (``elif max_num_seqs <= max_cudagraph_capture_size``; 0.29.0 and 0.30.0 append decode
    sizes at q > 1 only); the q x n decode sizes from 0.29 (0.21-0.28 have no ``uniform_decode_sizes``); the 1,024
    ceiling on a 10.x device from 0.28. At 100 sequences, q = 1: the ceiling is 2 x 100 = 200 tokens, 1, 2, 4 and
    8-200 by 8 (28 sizes); 0.31 adds 100 (29), one more PIECEWISE and one more FULL graph (V2: sizes up to 100)."""
    grid_200 = [1, 2, 4, *range(8, 201, 8)]
    assert capture_sizes(100, 8192, release=(0, 30)) == grid_200 and len(grid_200) == 28
    assert capture_sizes(100, 8192, release=(0, 31)) == capture_sizes(100, 8192) == sorted([*grid_200, 100])
    # q = 3 at 16 sequences: ceiling 96; 0.29+ add 3 x (1, 2, 4, 8, 16) = 3, 6, 12, 24, 48: 3, 6 are off the grid
    grid_96 = [1, 2, 4, *range(8, 97, 8)]
    assert capture_sizes(16, 8192, query_len=3, release=(0, 28)) == grid_96
    assert capture_sizes(16, 8192, query_len=3, release=(0, 29)) == sorted({*grid_96, 3, 6, 12, 24, 48})
    b200 = resolve_target("b200").target
    assert [largest_default_for(b200, release) for release in ((0, 27), (0, 28), None)] == [512, 1024, 1024]
    model = load_source("tests/fixtures/hf_configs/qwen3-0.6b.json").model
    at = {
        release: cuda_graph_estimate(model, H100, tp=1, max_num_seqs=100, max_num_batched_tokens=8192, release=release)
        for release in ((0, 30), (0, 31))
    }
    assert (at[(0, 30)].piecewise_graphs, at[(0, 30)].full_graphs) == (28, 15)  # 1, 2, 4, 8-96 of at most 100
    assert (at[(0, 31)].piecewise_graphs, at[(0, 31)].full_graphs) == (29, 16)  # and 100
    assert at[(0, 31)].bytes - at[(0, 30)].bytes == 2 * at[(0, 30)].per_graph_bytes
