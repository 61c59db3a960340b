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


def _prompt_s(case: ServingCase, release: str, shape=PROMPT) -> float:
    profile = prior_profile(H100, "bf16", generation="sglang-0.5", release=release)
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
