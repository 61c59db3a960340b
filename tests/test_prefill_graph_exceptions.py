"""SGLang 0.5.10's piecewise prefill graphs and the cases that turn them off (``core.engine.prefill_graphs``, read
in the 0.5.10 and 0.5.11 wheels: ``server_args.py`` ``_handle_piecewise_cuda_graph``, ``configs/model_config.py``
``piecewise_cuda_graph_disabled_model_archs``, ``piecewise_cuda_graph_runner.py`` ``can_run``): where one applies,
a prompt step on 0.5.10 costs what it costs on 0.5.9 (eager); where none does, less."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.cost.work import prefill_shape
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import SpeculativeSpec, VisionTowerSpec
from mha_cli.core.targets import load_targets
from mha_cli.core.tensor_parallel import ExpertLayout

H100 = load_targets()["h100-sxm"]
PROMPT = prefill_shape(512)


LAUNCH_S = 1e-3
"""A host time per operator that makes every eager prompt step launch-bound, so a step's cost tells which way it ran
whatever the fitted constants (NVIDIA's measured 42.7 us, shipped 2026-12-04, leaves a 512-token step device-bound)."""


def _prompt_s(case: ServingCase, release: str, shape=PROMPT) -> float:
    fitted = prior_profile(H100, "bf16", generation="sglang-0.5", release=release)
    profile = fitted.model_copy(update={"prefill_dispatch_overhead_s": LAUNCH_S})
    return Stepper(case, profile).step(shape).seconds


def _eager_on_0_5_10(case: ServingCase, shape=PROMPT) -> bool:
    """Whether ``case``'s prompt step costs on 0.5.10 what it costs on 0.5.9 (every operator from the host)."""
    graphed, eager = _prompt_s(case, "0.5.10", shape), _prompt_s(case, "0.5.9", shape)
    assert graphed <= eager
    return graphed == pytest.approx(eager)


def _spec(method: str) -> SpeculativeSpec:
    drafter = get_preset("qwen3-0.6b") if method == "draft_model" else get_preset("qwen3-8b")
    return SpeculativeSpec(
        method=method, num_speculative_tokens=3, acceptance_length=2.0, acceptance_source="test",
        drafter=drafter, drafter_is_model=method == "draft_model",
    )  # fmt: skip


DENSE = ServingCase(model=get_preset("qwen3-8b"), isl=512, osl=16, concurrency=1)
MOE = ServingCase(model=get_preset("mixtral-8x7b"), isl=512, osl=16, concurrency=1, tp=2)


def test_a_plain_case_runs_its_prompt_in_graphs():
    assert not _eager_on_0_5_10(DENSE)
    assert not _eager_on_0_5_10(MOE._replace(experts=ExpertLayout(ranks=2, whole=True)))


def test_pp_over_one_runs_the_prompt_eagerly():
    assert _eager_on_0_5_10(DENSE._replace(pp=2))


def test_dp_attention_and_an_all_to_all_backend_run_the_prompt_eagerly():
    assert _eager_on_0_5_10(MOE._replace(experts=ExpertLayout(ranks=4, whole=True, dp_attention=True)))
    deepep = ExpertLayout(ranks=4, whole=True, dp_attention=True, a2a_backend="deepep")
    assert _eager_on_0_5_10(MOE._replace(experts=deepep))


def test_a_multimodal_model_runs_the_prompt_eagerly():
    tower = VisionTowerSpec(kind="siglip", d_model=1152, n_layers=27, n_heads=16, d_ff=4304, patch_size=14,
                            projector_width=4096, tokens_per_image=256, patches_per_image=4096)  # fmt: skip
    assert _eager_on_0_5_10(DENSE._replace(model=DENSE.model.model_copy(update={"vision": tower})))


def test_a_listed_architecture_runs_the_prompt_eagerly():
    assert _eager_on_0_5_10(ServingCase(model=get_preset("qwen3-next-80b-a3b"), isl=512, osl=16, concurrency=1))


def test_the_hierarchical_cache_runs_the_prompt_eagerly():
    assert _eager_on_0_5_10(DENSE._replace(host_kv_cache=True))


def test_speculative_decoding_is_eager_in_0_5_10_and_only_for_hidden_state_drafters_from_0_5_11():
    eagle, draft = DENSE._replace(speculative=_spec("eagle3")), DENSE._replace(speculative=_spec("draft_model"))
    assert _eager_on_0_5_10(eagle) and _eager_on_0_5_10(draft)
    assert _prompt_s(eagle, "0.5.11") == pytest.approx(_prompt_s(eagle, "0.5.9"))
    assert _prompt_s(draft, "0.5.11") < _prompt_s(draft, "0.5.9")


def test_an_mla_prompt_step_over_2048_tokens_runs_eagerly():
    case = ServingCase(model=get_preset("deepseek-v2-lite"), isl=4096, osl=16, concurrency=1, chunk_tokens=8192)
    assert not _eager_on_0_5_10(case, prefill_shape(2048))
    assert _eager_on_0_5_10(case, prefill_shape(2049))
    dense = DENSE._replace(isl=4096, chunk_tokens=8192)  # not MLA: graphed up to the chunked prefill size
    stepper = Stepper(dense, prior_profile(H100, "bf16", generation="sglang-0.5", release="0.5.10"))
    assert stepper.prompt_launch_s(8192) == 0 < stepper.prompt_launch_s(8193)


def test_pp_2_on_h100_with_0_5_10_prices_the_ttft_of_0_5_9_and_says_why(cli):
    plan = ("plan", "qwen3-8b", "--target", "2xh100", "--tp", "1", "--pp", "2", "--closed-form", "--engine")
    graphed, eager = cli.json(*plan, "sglang@0.5.10"), cli.json(*plan, "sglang@0.5.9")
    assert graphed["ttft_ms"] == eager["ttft_ms"]
    assert any("pp 2 > 1 turns the piecewise CUDA graphs off" in note for note in graphed["notes"])


def _eager_on(case: ServingCase, release: str, shape=PROMPT) -> bool:
    """Whether ``case``'s prompt step costs on ``release`` what it costs on 0.5.9 (every operator from the host)."""
    graphed, eager = _prompt_s(case, release, shape), _prompt_s(case, "0.5.9", shape)
    assert graphed <= eager
    return graphed == pytest.approx(eager)


def test_sglang_without_a_release_is_the_newest_read_in_both_modules():
    from mha_cli.core.engine.prefill_graphs import LATEST_READ, graph_kind
    from mha_cli.core.engine.releases_read import NEWEST_READ, past_newest_read, past_newest_read_note

    assert LATEST_READ == NEWEST_READ["sglang"].release == NEWEST_READ["sglang"].rules == "0.5.23"
    later = past_newest_read("sglang", "0.5.30")
    assert later is not None and "its rules too" in past_newest_read_note("sglang", "0.5.30", later)
    assert [graph_kind(r) for r in ("0.5.10", "0.5.14", "0.5.15", "0.5.23")] == ["piecewise"] * 2 + ["breakable"] * 2


def test_0_5_13_drops_deepseek_v32_from_the_listed_architectures():
    case = ServingCase(model=get_preset("deepseek-v3.2-exp"), isl=512, osl=16, concurrency=1, tp=8)
    assert _eager_on(case, "0.5.12") and not _eager_on(case, "0.5.13")  # configs/model_config.py of each wheel


def test_breakable_graphs_keep_the_hierarchical_cache_and_an_eagle_target_graphed():
    assert _eager_on(DENSE._replace(host_kv_cache=True), "0.5.14")  # tc_piecewise: the 0.5.11 list
    assert not _eager_on(DENSE._replace(host_kv_cache=True), "0.5.15")
    eagle = DENSE._replace(speculative=_spec("eagle3"))
    assert _eager_on(eagle, "0.5.14") and not _eager_on(eagle, "0.5.23")


def test_breakable_rules_by_release_pp_dp_attention_and_mla():
    assert not _eager_on(DENSE._replace(pp=2), "0.5.18") and _eager_on(DENSE._replace(pp=2), "0.5.19")
    dp = MOE._replace(experts=ExpertLayout(ranks=4, whole=True, dp_attention=True, a2a_backend="deepep"))
    assert _eager_on(dp, "0.5.16") and not _eager_on(dp, "0.5.17")
    mla = ServingCase(model=get_preset("deepseek-v2-lite"), isl=512, osl=16, concurrency=1)
    assert _eager_on(mla, "0.5.17") and not _eager_on(mla, "0.5.18")
    tower = VisionTowerSpec(kind="siglip", d_model=1152, n_layers=27, n_heads=16, d_ff=4304, patch_size=14,
                            projector_width=4096, tokens_per_image=256, patches_per_image=4096)  # fmt: skip
    assert _eager_on(DENSE._replace(model=DENSE.model.model_copy(update={"vision": tower})), "0.5.23")


def test_a_qwen3_5_vision_model_keeps_the_breakable_graphs_from_0_5_16():
    tower = VisionTowerSpec(kind="siglip", d_model=1152, n_layers=27, n_heads=16, d_ff=4304, patch_size=14,
                            projector_width=4096, tokens_per_image=256, patches_per_image=4096)  # fmt: skip
    qwen3_5 = DENSE._replace(model=DENSE.model.model_copy(update={"vision": tower, "family": "qwen3_5"}))
    assert _eager_on(qwen3_5, "0.5.15") and not _eager_on(qwen3_5, "0.5.16")  # the allowlist of 0.5.16's wheel
    assert _eager_on(qwen3_5, "0.5.14")  # the piecewise graphs' list has no Qwen3.5


def test_deepseek_v3_on_an_sm100_gpu_runs_its_prompt_eagerly_from_the_trtllm_mla_rule():
    case = ServingCase(model=get_preset("deepseek-v3"), isl=512, osl=16, concurrency=1, tp=8, weight_dtype="fp8-block")
    for target_id, eager in (("b200", True), ("h200", False)):
        target = load_targets()[target_id]
        graphed = prior_profile(target, "fp8-block", generation="sglang-0.5", release="0.5.23")
        launched = prior_profile(target, "fp8-block", generation="sglang-0.5", release="0.5.9")
        seconds = [Stepper(case, profile).step(PROMPT).seconds for profile in (graphed, launched)]
        assert (seconds[0] == pytest.approx(seconds[1])) is eager, target_id
        reason = Stepper(case, graphed).graphs_off()
        assert (reason is not None and "trtllm_mla" in reason) is eager


def test_an_eagle_drafters_prompt_runs_in_the_breakable_graphs_and_a_draft_models_does_not():
    eagle_drafter, model_drafter = DENSE._replace(drafts_for="eagle3"), DENSE._replace(drafts_for="draft_model")
    assert _eager_on(eagle_drafter, "0.5.14") and not _eager_on(eagle_drafter, "0.5.15")  # eagle_worker_v2.py
    assert _eager_on(model_drafter, "0.5.23")


def test_the_token_limit_by_release_mla_8192_from_0_5_23_and_llama_2_at_4096():
    from mha_cli.core.engine.prefill_graphs import graph_tokens

    mla = ServingCase(model=get_preset("deepseek-v2-lite"), isl=4096, osl=16, concurrency=1, chunk_tokens=16384)
    assert [graph_tokens(mla, r) for r in ("0.5.10", "0.5.22", "0.5.23")] == [2048, 2048, 8192]
    assert graph_tokens(mla._replace(chunk_tokens=4096), "0.5.23") == 4096  # min(8192, the chunked prefill size)
    llama_2 = ServingCase(model=get_preset("llama-2-7b"), isl=8192, osl=16, concurrency=1, chunk_tokens=8192)
    assert graph_tokens(llama_2, "0.5.10") == graph_tokens(llama_2, "0.5.23") == 4096  # "llama-2" in model_path
    assert graph_tokens(DENSE._replace(chunk_tokens=8192), "0.5.23") == 8192
    steppers = {
        r: Stepper(mla, prior_profile(H100, "bf16", generation="sglang-0.5", release=r)) for r in ("0.5.22", "0.5.23")
    }
    assert steppers["0.5.23"].prompt_launch_s(8192) == 0 < steppers["0.5.22"].prompt_launch_s(8192)
