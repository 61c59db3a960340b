"""Speculative decoding: the drafter's memory against hand counts of real configs, the acceptance defaults, the step
(draft + verify over T tokens) in the closed form and the simulator, where it stops paying, the launch lines and
the CLI's options and refusals."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import pytest

from mha_cli.cli.app import app
from mha_cli.core.cost.plan import plan_serving, simulate_plan
from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.cost.speculative import decode_step, verify_shape
from mha_cli.core.cost.speculative_plan import compare_speculative
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.cost.work import prefill_shape
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.errors import BadInputError
from mha_cli.core.serve.replica import ClientSpec
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.sources import load_source
from mha_cli.core.speculative import (
    build_spec,
    chain_length,
    default_acceptance,
    drafter_kv_bytes_per_token,
    drafter_weight_bytes,
    equivalent_layers,
    memory_model,
    mtp_layers,
    rate_for,
    sglang_flags,
    vllm_flags,
)
from mha_cli.core.targets import resolve_target
from mha_cli.core.tensor_parallel import ExpertLayout
from tests.conftest import reference_hf_config

D = 7168  # DeepSeek-V3 hidden_size


def _fp8_block(out_features: int, in_features: int) -> int:
    """One fp8 linear of DeepSeek-V3's checkpoint: 1 B a weight + an fp32 scale per 128 x 128 block."""
    return out_features * in_features + math.ceil(out_features / 128) * math.ceil(in_features / 128) * 4


def _deepseek_mtp_checkpoint_bytes() -> int:
    """model.layers.61 of DeepSeek-V3's checkpoint by hand, less the embedding and head vLLM shares with the target:
    MLA attention (q_lora 1536, 128 heads of 128 + 64 rope, kv_lora 512, v 128), 256 routed + 1 shared experts of
    2048, the router (bf16, with its fp32 e_score_correction_bias), the layer's norms; eh_proj (2d x d) and enorm,
    hnorm, shared_head.norm in bf16."""
    attention = (
        _fp8_block(1536, D) + _fp8_block(128 * 192, 1536) + _fp8_block(576, D) + _fp8_block(128 * 256, 512)
        + _fp8_block(D, 128 * 128) + (1536 + 512) * 2
    )  # fmt: skip
    experts = 257 * (2 * _fp8_block(2048, D) + _fp8_block(D, 2048))
    router = 256 * D * 2 + 256 * 4
    layer_norms = 2 * D * 2
    mtp_own = 2 * D * D * 2 + 3 * D * 2
    return attention + experts + router + layer_norms + mtp_own


@pytest.fixture(scope="module")
def deepseek():
    return load_source(str(reference_hf_config("deepseek-v3")))


def test_deepseek_v3_mtp_layer_weights_and_cache_match_a_hand_count(deepseek):
    spec = build_spec(deepseek.model, origin=deepseek.origin, kind=deepseek.kind, method="mtp")
    assert (spec.num_speculative_tokens, spec.drafter.n_layers) == (1, 1)  # num_nextn_predict_layers: 1
    counted = drafter_weight_bytes(spec, 1, "fp8-block")
    # the project's weight model leaves out the router's e_score_correction_bias (256 fp32 = 1,024 B a layer)
    assert _deepseek_mtp_checkpoint_bytes() - counted == 1024
    assert counted == 11_717_510_368  # 10.91 GiB: the hand count above, less that bias
    # expert parallel over 8 ranks (DP attention's layout): each rank holds 32 of the 256 routed experts whole
    routed = 2 * _fp8_block(2048, D) + _fp8_block(D, 2048)
    assert drafter_weight_bytes(spec, 1, "fp8-block", ExpertLayout(8, whole=True)) == counted - 224 * routed
    # the latent: kv_lora_rank + qk_rope_head_dim = 576 values a token, whole on every rank
    assert drafter_kv_bytes_per_token(spec, 1, "bf16") == 576 * 2
    assert drafter_kv_bytes_per_token(spec, 8, "bf16") == 576 * 2
    assert drafter_kv_bytes_per_token(spec, 8, "fp8") == 576


def test_the_memory_plan_holds_the_mtp_layer_in_weights_and_pool(deepseek):
    target = resolve_target("8xh200")
    deployment = merge_deployment(deepseek.deployment, model=deepseek.model, seq_len=2048, target=target.spec)
    profile, ceiling = prior_profile(target.target, "fp8-block"), datasheet_profile(target.target, "fp8-block")
    spec = build_spec(deepseek.model, origin=deepseek.origin, kind=deepseek.kind, method="mtp")
    plain = plan_serving(deepseek.model, target, deployment, profile, ceiling, isl=1024, osl=1024, concurrency=1, tp=8)
    with_mtp = plan_serving(
        deepseek.model, target, deployment.model_copy(update={"speculative": spec}), profile, ceiling,
        isl=1024, osl=1024, concurrency=1, tp=8,
    )  # fmt: skip
    added = with_mtp.memory.weight_bytes_per_device - plain.memory.weight_bytes_per_device
    assert added == drafter_weight_bytes(spec, 8, "fp8-block")
    # 61 target layers + the MTP layer, 1,152 B a token each (bf16 latent, whole on every rank)
    assert plain.memory.engine.kv_bytes_per_token_per_rank == 61 * 1152 == 70_272
    assert with_mtp.memory.engine.kv_bytes_per_token_per_rank == 62 * 1152
    assert with_mtp.memory.max_tokens_per_device < plain.memory.max_tokens_per_device
    assert any("MTP layer" in note for note in with_mtp.memory.engine.notes)


def test_a_draft_model_is_sharded_with_the_target_and_shares_its_pool():
    target_model = load_source(str(reference_hf_config("llama-3.1-70b"))).model
    draft = str(reference_hf_config("llama-3.2-1b"))
    spec = build_spec(target_model, origin="", kind="hf-config", draft=draft, acceptance_length=2.5)
    assert spec.method == "draft_model" and spec.drafter_is_model
    # Llama-3.2-1B by hand: tied 128,256 x 2048 embedding; 16 layers of q/o 2048 x 2048, k/v 2048 x 512 (8 heads of
    # 64), SwiGLU 3 x 2048 x 8192, two norms; the final norm; bf16
    layer = 2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 8192 + 2 * 2048
    assert drafter_weight_bytes(spec, 1, "bf16") == (128_256 * 2048 + 16 * layer + 2048) * 2 == 2_471_628_800
    # tp 8 (vLLM shards the draft with the target's tp): 1/8 of heads, widths and vocabulary; norms whole
    layer_tp8 = 2 * 2048 * 256 + 2 * 2048 * 64 + 3 * 2048 * 1024 + 2 * 2048
    assert drafter_weight_bytes(spec, 8, "bf16") == (128_256 // 8 * 2048 + 16 * layer_tp8 + 2048) * 2
    # its cache: 16 layers x K and V x 8 heads x 64 x 2 B, one KV head per rank at tp 8
    assert drafter_kv_bytes_per_token(spec, 1, "bf16") == 16 * 2 * 8 * 64 * 2 == 32_768
    assert drafter_kv_bytes_per_token(spec, 8, "bf16") == 4096
    target = resolve_target("8xh100")
    deployment = merge_deployment(None, model=target_model, seq_len=2048, target=target.spec)
    profile, ceiling = prior_profile(target.target, "bf16"), datasheet_profile(target.target, "bf16")
    plan = plan_serving(
        target_model, target, deployment.model_copy(update={"speculative": spec}), profile, ceiling,
        isl=1024, osl=1024, concurrency=1, tp=8,
    )  # fmt: skip
    # 80 layers x 2 x 1 head x 128 x 2 B on a rank, and the draft's 4,096 B
    assert plan.memory.engine.kv_bytes_per_token_per_rank == 80 * 512 + 4096


def test_acceptance_defaults_come_from_published_figures():
    assert chain_length(0.875, 1) == 1.875
    assert rate_for(chain_length(0.7, 5), 5) == pytest.approx(0.7, abs=1e-9)
    length, source = default_acceptance("mtp", 1)
    assert length == 1.875 and "arxiv.org/abs/2412.19437" in source
    length, source = default_acceptance("eagle3", 7)
    assert length == 3.53 and "vllm/issues/26191" in source
    length, source = default_acceptance("eagle3", 3)  # carried from k = 7 at its per-position rate
    rate = rate_for(3.53, 7)
    assert length == pytest.approx(1 + rate + rate**2 + rate**3) and "an assumption" in source
    with pytest.raises(BadInputError, match="--acceptance-length"):
        default_acceptance("draft_model", 4)


def test_mtp_at_three_drafts_is_the_measured_length_and_longer_chains_never_accept_fewer():
    """SGLang's cookbook measured T = 2.46 for DeepSeek-V3.2-Exp's MTP layer at 3 steps; k = 1's 0.875 a position
    carried to k = 3 gave 3.31 (trial 318 #7). Between published points the default never falls as k grows (k = 2
    sits between k = 1 and 3 and takes k = 3's lower rate)."""
    length, source = default_acceptance("mtp", 3)
    assert length == 2.46 and "sgl-cookbook" in source
    assert chain_length(0.875, 3) == pytest.approx(3.3105, abs=1e-4)  # the old default, now not used at k = 3
    lengths = [default_acceptance("mtp", k)[0] for k in range(1, 9)]
    assert lengths == sorted(lengths)
    assert lengths[1] == pytest.approx(chain_length(rate_for(2.46, 3), 2))


def _case(model_name: str, spec, users: int, tp: int = 1) -> ServingCase:
    model = load_source(model_name).model
    return ServingCase(model=model, isl=1024, osl=256, concurrency=users, tp=tp, speculative=spec)


def test_the_step_verifies_k_plus_one_and_drafts_k_and_the_simulator_prices_it_alike():
    model = load_source("llama-3.1-8b").model
    spec = build_spec(model, origin="", kind="preset", method="eagle3", num_speculative_tokens=3)
    profile = prior_profile(resolve_target("h100").target, "bf16")
    stepper = Stepper(_case("llama-3.1-8b", spec, 8), profile)
    plain = Stepper(_case("llama-3.1-8b", None, 8), profile)
    verify = stepper.step(verify_shape(8, 3, 1500))
    step = decode_step(stepper, 8, 1500)
    assert verify.seconds < step.seconds  # the drafting comes on top
    assert step.seconds > decode_step(plain, 8, 1500).seconds  # k + 1 tokens and a drafter cost more than one token
    # the simulator's step cost is the same sum, priced through its own path
    assert StepCost(stepper).seconds(8, 1504, []) == pytest.approx(decode_step(stepper, 8, 1504).seconds, rel=1e-6)


def _plans(model_name: str, target_name: str, spec_args: dict, users: int, tp: int):
    loaded = load_source(model_name)
    target = resolve_target(target_name)
    deployment = merge_deployment(loaded.deployment, model=loaded.model, seq_len=2048, target=target.spec)
    profile = prior_profile(target.target, deployment.weight_dtype)
    ceiling = datasheet_profile(target.target, deployment.weight_dtype)
    spec = build_spec(loaded.model, origin=loaded.origin, kind=loaded.kind, **spec_args)
    with_spec = deployment.model_copy(update={"speculative": spec})
    common = {"isl": 1024, "osl": 1024, "concurrency": users, "tp": tp}
    return (
        plan_serving(loaded.model, target, with_spec, profile, ceiling, **common),
        plan_serving(loaded.model, target, deployment, profile, ceiling, **common),
        compare_speculative(loaded.model, target, with_spec, profile, ceiling, **common),
        (loaded, with_spec, profile, spec),
    )


def test_itl_is_the_step_over_t_and_it_pays_at_batch_one():
    with_spec, plain, compared, (_, _, _, spec) = _plans("llama-3.1-8b", "h100", {"method": "eagle3"}, 1, 1)
    assert with_spec.itl_ms == pytest.approx(with_spec.decode_step.seconds * 1e3 / spec.acceptance_length)
    assert with_spec.itl_ms < plain.itl_ms and compared.pays
    assert compared.itl_ms == with_spec.itl_ms and compared.itl_ms_without == plain.itl_ms


def test_a_draft_model_stops_paying_at_a_large_batch_and_mtp_does_not_at_small_ones():
    # control: a 1B draft for a 70B target, k = 4 at T = 2.5: at a few users it pays, at hundreds the verification of
    # 5 tokens per sequence is compute-bound and loses
    _, _, draft, _ = _plans(
        "llama-3.1-70b", "8xh100", {"draft": "llama-3.2-1b", "num_speculative_tokens": 4, "acceptance_length": 2.5},
        1, 8,
    )  # fmt: skip
    assert draft.pays and draft.loses_from is not None and 16 < draft.loses_from <= 1024
    first_loss = next(point for point in draft.curve if point.concurrency == draft.loses_from)
    assert first_loss.output_tokens_per_s < first_loss.output_tokens_per_s_without
    # an accepted length of 1 (every draft rejected) loses at once
    _, _, hopeless, _ = _plans("llama-3.1-8b", "h100", {"method": "eagle3", "acceptance_length": 1.0}, 1, 1)
    assert not hopeless.pays and hopeless.loses_from == 1


def test_the_simulator_emits_t_tokens_a_step_and_measures_itl_per_chunk():
    with_spec, _, _, (loaded, deployment, profile, spec) = _plans("llama-3.1-8b", "h100", {"method": "eagle3"}, 1, 1)
    simulated = simulate_plan(with_spec, loaded.model, deployment, profile, ClientSpec(num_prompts=3)).simulated
    assert simulated is not None
    assert simulated.tpot_ms.mean == pytest.approx(with_spec.itl_ms, rel=0.03)
    # one streamed chunk a step: the gap between chunks is the step, about T tokens' worth
    assert simulated.itl_ms.median == pytest.approx(simulated.tpot_ms.mean * spec.acceptance_length, rel=0.05)
    assert simulated.output_tokens_per_s == pytest.approx(1024 * 3 / simulated.duration_s)


def test_the_simulated_replica_allocates_vllms_lookahead_only(monkeypatch):
    """``simulate_deployment`` gives vLLM's replica k lookahead slots for the drafter and T (``core.serve.speculative``),
    SGLang's T and none."""
    import mha_cli.core.serve.replica as replica

    seen = []
    real = replica.simulate

    def spy(workload, limits, *args, **kwargs):
        seen.append((limits.engine, limits.acceptance_length, limits.lookahead_tokens))
        return real(workload, limits, *args, **kwargs)

    monkeypatch.setattr(replica, "simulate", spy)
    spec_args = {"method": "eagle3", "num_speculative_tokens": 3, "acceptance_length": 2.5}
    with_spec, _, _, (loaded, deployment, profile, _) = _plans("llama-3.1-8b", "h100", spec_args, 1, 1)
    simulate_plan(with_spec, loaded.model, deployment, profile, ClientSpec(num_prompts=2))
    on_sglang = merge_deployment(deployment, model=loaded.model, engine="sglang")
    target = resolve_target("h100")
    ceiling = datasheet_profile(target.target, deployment.weight_dtype)
    planned = plan_serving(loaded.model, target, on_sglang, profile, ceiling, isl=1024, osl=1024, concurrency=1, tp=1)
    simulate_plan(planned, loaded.model, on_sglang, profile, ClientSpec(num_prompts=2))
    assert seen == [("vllm", 2.5, 3), ("sglang", 2.5, 0)]


def test_launch_lines_carry_the_speculative_flags():
    model = load_source("llama-3.1-70b").model
    spec = build_spec(model, origin="", kind="preset", draft="llama-3.2-1b", num_speculative_tokens=4,
                      acceptance_length=2.5)  # fmt: skip
    flags = vllm_flags(spec)
    assert flags[0] == "--speculative-config"
    assert json.loads(flags[1]) == {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B",
                                    "num_speculative_tokens": 4}  # fmt: skip
    assert sglang_flags(spec) == [
        "--speculative-algorithm", "STANDALONE", "--speculative-num-steps", "4", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "5", "--speculative-draft-model-path", "meta-llama/Llama-3.2-1B",
    ]  # fmt: skip
    mtp = build_spec(load_source("deepseek-v3").model, origin="", kind="preset", method="deepseek_mtp")
    assert json.loads(vllm_flags(mtp)[1]) == {"method": "mtp", "num_speculative_tokens": 1}
    assert sglang_flags(mtp)[:2] == ["--speculative-algorithm", "NEXTN"]


def test_plan_search_launch_lines_paste_the_speculative_config(cli):
    result = cli.json(
        "plan", "llama-3.1-70b", "--target", "8xh100", "--isl", "1024", "--osl", "256", "--closed-form",
        "--draft", "llama-3.2-1b", "--num-speculative-tokens", "4", "--acceptance-length", "2.5",
    )  # fmt: skip
    vllm = shlex.split(result["launch"]["vllm"])
    config = json.loads(vllm[vllm.index("--speculative-config") + 1])
    assert config == {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B", "num_speculative_tokens": 4}
    sglang = shlex.split(result["launch"]["sglang"])
    assert sglang[sglang.index("--speculative-algorithm") + 1] == "STANDALONE"
    assert sglang[sglang.index("--speculative-num-draft-tokens") + 1] == "5"


def test_plan_json_puts_speculative_beside_plain(cli):
    result = cli.json(
        "plan", "deepseek-v3", "--target", "8xh200", "--tp", "8", "--isl", "1024", "--osl", "1024", "--closed-form",
        "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}',
    )  # fmt: skip
    spec = result["speculative"]
    assert spec["method"] == "mtp" and spec["acceptance_length"] == 1.875
    assert spec["itl_ms"] == result["itl_ms"] and spec["itl_ms_without"] > spec["itl_ms"]
    assert spec["kv_tokens_per_device"] < spec["kv_tokens_per_device_without"]
    assert [p["concurrency"] for p in spec["curve"]][:3] == [1, 2, 4]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["llama-3.1-8b", "--speculative-config", "{method: mtp}"], "--speculative-config is not JSON"),
        (
            ["llama-3.1-8b", "--num-speculative-tokens", "2"],
            "--num-speculative-tokens without a method or --draft"
            " prices the model's own MTP layers, and llama-3.1-8b has none: give --draft MODEL",
        ),
        (["llama-3.1-8b", "--acceptance-length", "2"], "--acceptance-length without a method or --draft prices"),
        (["llama-3.1-8b", "--num-speculative-tokens", "0"], "--num-speculative-tokens 0: give 1 to 32"),  # trial 330 #9
        (
            ["llama-3.1-8b", "--speculative-config", '{"num_speculative_tokens": 40}'],  # review 331 #2
            "--speculative-config's num_speculative_tokens 40: give 1 to 32",
        ),
        (
            ["llama-3.1-8b", "--speculative-config", '{"num_speculative_tokens": 2}'],
            "--speculative-config's num_speculative_tokens without a method or --draft prices",
        ),
        (["llama-3.1-8b", "--acceptance-length", "0"], "--acceptance-length 0: give the mean tokens per target step"),
        (["llama-3.1-8b", "--speculative-config", '{"method": "ngram"}'], "is not priced"),
        (["llama-3.1-8b", "--speculative-config", '{"method": "eagle3", "top_k": 2}'], "top_k not priced"),
        (["llama-3.1-8b", "--draft", "llama-3.2-1b"], "no published acceptance length"),
        (["llama-3.1-8b", "--draft", "qwen3-0.6b", "--acceptance-length", "2"], "same tokenizer"),
        (["deepseek-v3", "--num-speculative-tokens", "2", "--acceptance-length", "3.5"], "give 1 to k + 1 = 3"),
    ],
)
def test_plan_refuses_speculative_input_in_one_line(cli, args, message):
    result = cli.run("plan", *args, "--target", "8xh100", "--closed-form")
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_plan_shows_speculative_beside_plain_and_where_it_stops_paying(cli):
    result = cli.run(
        "plan", "llama-3.1-70b", "--target", "8xh100", "--tp", "8", "--isl", "1024", "--osl", "256", "--closed-form",
        "--draft", "llama-3.2-1b", "--num-speculative-tokens", "4", "--acceptance-length", "2.5",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "speculative decoding (draft_model, k = 4, T = 2.50 tokens per target step)" in text
    assert "it stops paying from" in text and "acceptance length: given (--acceptance-length)" in text


def test_the_simulators_step_with_a_prefill_chunk_prices_the_drafter_over_it():
    model = load_source("llama-3.1-8b").model
    spec = build_spec(model, origin="", kind="preset", method="eagle3", num_speculative_tokens=3)
    profile = prior_profile(resolve_target("h100").target, "bf16")
    stepper = Stepper(_case("llama-3.1-8b", spec, 8), profile)
    # the closed form's step (verify + draft passes, the first over the chunk too) and the simulator's agree
    closed = decode_step(stepper, 8, 1504, prefill_shape(512, context=256)).seconds
    # within 1.5%: 1.35% apart since weight GEMMs are priced on 16-row tiles (gemm_tiles, 2026-12-03; within 1% before),
    # the two group the drafter's few rows differently (not read further)
    assert StepCost(stepper).seconds(8, 1504, [(512, 256)]) == pytest.approx(closed, rel=0.015)
    # a prompt alone: the drafter's pass over it comes on top of the target's
    alone = StepCost(stepper).seconds(0, 0, [(512, 256)])
    plain = StepCost(Stepper(_case("llama-3.1-8b", None, 8), profile)).seconds(0, 0, [(512, 256)])
    assert alone > plain


def test_sglang_gives_the_drafter_a_pool_of_its_own(cli):
    args = ["plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--isl", "1024", "--osl", "256", "--closed-form",
            "--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}']  # fmt: skip
    sglang = cli.json(*args, "--engine", "sglang")
    vllm = cli.json(*args)
    # SGLang sizes the target's pool first: the drafter's tokens do not come out of it; vLLM's pool holds them
    assert sglang["speculative"]["kv_tokens_per_device"] == sglang["speculative"]["kv_tokens_per_device_without"]
    assert vllm["speculative"]["kv_tokens_per_device"] < vllm["speculative"]["kv_tokens_per_device_without"]
    note = next(n for n in sglang["notes"] if n.startswith("speculative decoding"))
    tokens = sglang["memory"]["engine"]["kv_tokens"] + sglang["memory"]["engine"]["max_num_seqs"] * 7 + 100
    assert f"a pool of {tokens:,} tokens x 4,096 B" in note  # one layer: 2 x 8 heads x 128 x 2 B


def test_a_value_given_twice_must_agree(cli):
    """--num-speculative-tokens and --draft against the same keys of --speculative-config: one line, not a silent pick."""
    args = ("plan", "llama-3.1-70b", "--target", "8xh100", "--tp", "8", "--closed-form")
    config = '{"method": "draft_model", "model": "llama-3.2-1b", "num_speculative_tokens": 2}'
    result = cli.run(*args, "--speculative-config", config, "--num-speculative-tokens", "5")
    assert result.exit_code == 2 and "disagree" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert cli.run(*args, "--speculative-config", config, "--num-speculative-tokens", "2",
                   "--acceptance-length", "2").exit_code == 0  # fmt: skip


def test_an_eagle_drafter_is_full_attention_whatever_the_targets_layers():
    """EAGLE's default drafter is one full-attention layer: no window, chunk or shared K/V carried over from the
    target (Gemma-3n's 15 shared layers made a one-layer drafter cache -14 layers and plan exit 70)."""
    from mha_cli.core.presets import get_preset
    from mha_cli.core.speculative import decoder_layers

    for name in ("gemma-3n-e4b", "gemma-2-9b", "mistral-7b-v0.1", "llama-4-scout"):
        drafter = decoder_layers(get_preset(name), 1)
        assert drafter.token_layer_kinds() == {"global": 1}, name


def test_the_drafters_cache_layers_keep_the_targets_layer_counts():
    """Gemma 2 (42 layers, local and global alternating) with 2 more full-attention layers: 21 local, 23 global (the
    pattern appended to, not repeated, gave 11 and 33)."""
    from mha_cli.core.presets import get_preset

    target = get_preset("gemma-2-9b")
    spec = build_spec(target, origin="gemma-2-9b", kind="preset", method="eagle")
    extra = equivalent_layers(spec, target, 1, "bf16")
    model = memory_model(target, spec, 1, "bf16")
    assert (model.n_local_layers, model.n_global_layers) == (21, 21 + extra)


def test_gemma_3n_with_eagle_plans(cli):
    data = cli.json("plan", "gemma-3n-e4b", "--target", "h100", "--tp", "1", "--isl", "1024", "--osl", "128",
                    "--concurrency", "4", "--speculative-config", '{"method": "eagle"}')  # fmt: skip
    assert 0 < data["speculative"]["kv_tokens_per_device"] < data["speculative"]["kv_tokens_per_device_without"]


def test_an_eagle_drafter_of_an_mxfp4_expert_model_is_priced_in_bf16(cli):
    """gpt-oss's mxfp4 is a format of its routed experts; the default EAGLE drafter is one dense layer, so its
    weights are bf16 (the plan was refused: "mxfp4 quantises routed experts and gpt-oss-20b has none")."""
    data = cli.json("plan", "gpt-oss-20b", "--target", "h100", "--tp", "1", "--isl", "1024", "--osl", "128",
                    "--concurrency", "4", "--speculative-config", '{"method": "eagle"}')  # fmt: skip
    assert data["speculative"]["drafter_weight_bytes_per_device"] > 0


def test_a_draft_model_that_cannot_be_read_says_it_is_the_drafter(cli, tmp_path):
    """A drafter ``model`` that is a file but no model config (weights, a README) said "malformed YAML" of the file
    alone; it now says the draft model could not be read and how to name it, in one line, exit 2; a name that is
    nothing says it is the drafter's."""
    target = str(Path(__file__).parent / "fixtures" / "hf_configs" / "llama-3.1-8b.json")
    readme = tmp_path / "README.md"
    readme.write_text("a: b: c\n")
    args = ("plan", target, "--target", "h100", "--closed-form", "--acceptance-length", "2")
    lines = {}
    for model in (str(readme), "no-such-draft-model"):
        config = json.dumps({"method": "draft_model", "model": model, "num_speculative_tokens": 4})
        result = cli.run(*args, "--speculative-config", config)
        assert result.exit_code == 2 and "Traceback" not in result.output
        lines[model] = " ".join(result.output.split())
    assert lines[str(readme)].startswith(
        f"error: the draft model {readme} (--draft, or --speculative-config's model) is a file mha cannot read as a"
        " model config (malformed YAML at line 1, column 5): give the drafter's config.json, its model folder"
    )
    assert lines["no-such-draft-model"].startswith(
        "error: the draft model (--draft, or --speculative-config's model): 'no-such-draft-model' is neither"
    )
    assert " ".join(cli.run(*args, "--draft", str(readme)).output.split()) == lines[str(readme)]


def test_qwen3_6s_mtp_layers_are_read_from_mtp_num_hidden_layers(tmp_path):
    """Qwen3.5/3.6 count their MTP layers in ``mtp_num_hidden_layers`` (text_config), the field vLLM reads as the
    drafter's n_predict (config/speculative.py hf_config_override, qwen3_5 -> qwen3_5_mtp); DeepSeek's
    num_nextn_predict_layers is absent there. A config with the field at 0 has none."""
    source = "tests/fixtures/hf_configs/qwen3.6-27b.json"
    model = load_source(source).model
    assert mtp_layers(model, source, "hf-config") == 1
    data = json.loads(Path(source).read_text())
    data["text_config"]["mtp_num_hidden_layers"] = 0
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(BadInputError, match="has no MTP layers"):
        mtp_layers(model, str(tmp_path / "config.json"), "hf-config")


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        ("vllm@0.11", "speculative decoding (draft_model) sets vLLM's --speculative-config method=draft_model (first in"
                      " 0.15.0), which vLLM 0.11.x lacks: drop it or use --engine vllm@0.15.0 or later"),
        ("sglang@0.5.1", "speculative decoding (draft_model) sets SGLang's --speculative-algorithm STANDALONE (first"
                         " in 0.5.2), which SGLang 0.5.1 lacks: drop it or use --engine sglang@0.5.2 or later"),
    ],
)  # fmt: skip
def test_a_method_the_release_lacks_is_refused(cli, engine, expected):
    """``--engine vllm@0.11 --draft llama-3.2-1b`` priced a draft model vLLM 0.11 cannot run (V1's draft_model is first
    in 0.15.0; 0.11-0.14 had none) with exit 0 and only SGLang's launch line, under a note."""
    args = ("plan", "llama-3.1-8b", "--target", "h100", "--draft", "llama-3.2-1b", "--acceptance-length", "2.5")
    result = cli.run(*args, "--engine", engine, "--json")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"error: {expected}\n"


@pytest.mark.parametrize("engine", ["vllm@0.15", "vllm-v1", "sglang@0.5.2", "trtllm", "vllm@0.10", "vllm@0.6"])
def test_a_method_the_release_has_is_priced(cli, engine):
    """vLLM 0.8-0.10 ran draft models on the V0 engine, and V0 by --speculative-model: priced, their line left out
    with a note where its spelling differs (the review of the refusal found those refused too)."""
    args = ("plan", "llama-3.1-8b", "--target", "h100", "--draft", "llama-3.2-1b", "--acceptance-length", "2.5")
    assert cli.json(*args, "--engine", engine, "--tp", "1", "--closed-form")["speculative"] is not None


def test_under_speculative_decoding_the_itl_target_is_read_on_tpot_and_said_so(cli):
    """The gap between chunks of T tokens is not a token's time: --itl-ms is judged on TPOT, and the miss names it
    (it read "p99 itl 6.2 ms" beside a plain plan's per-token ITL; asked by newuser trial 236)."""
    args = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--concurrency", "8", "--num-prompts", "40")
    spec = cli.json(*args, "--draft", "llama-3.2-1b", "--acceptance-length", "2.5", "--itl-ms", "1")["simulated"]
    assert spec["misses"] == [f"p99 tpot (--itl-ms) {spec['tpot_ms']['p99']:,.1f} ms > 1 ms"]
    plain = cli.json(*args, "--itl-ms", "1")["simulated"]
    assert plain["misses"] == [f"p99 itl {plain['itl_ms']['p99']:,.1f} ms > 1 ms"]


def test_mtp_on_a_vllm_before_its_mtp_spelling_is_priced(cli):
    """vLLM 0.10.2 ran DeepSeek's MTP as method deepseek_mtp (``mtp`` from 0.11.0): not refused."""
    args = ("plan", "deepseek-v3", "--target", "8xh200", "--engine", "vllm@0.10.2", "--tp", "8", "--closed-form")
    assert cli.json(*args, "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}')["speculative"]


@pytest.mark.parametrize(
    ("release", "written", "running"),
    [("0.9.2", '{"method":"deepseek_mtp","num_speculative_tokens":2}', "0.9.0-0.10.2"),
     ("0.10.2", '{"method":"deepseek_mtp","num_speculative_tokens":2}', None),
     ("0.11.0", '{"method":"mtp","num_speculative_tokens":2}', None), ("0.8.5", None, None)],
)  # fmt: skip
def test_a_vllm_before_method_mtp_gets_its_own_mtp_line(cli, release, written, running):
    """Trial 339 #2: ``--engine vllm@0.9.2`` with MTP wrote no vllm line (0.9.2 has no method=mtp). vLLM 0.9.0 to
    0.10.2 name DeepSeek's MTP deepseek_mtp, which their V1 check accepts (without a method 0.9.x fell back to V0:
    review 341 #1); 0.8.5's V1 takes no MTP: no line, the plan prices V1."""
    args = ("plan", "deepseek-v3", "--target", "8xh200", "--engine", f"vllm@{release}", "--tp", "8", "--closed-form",
            "--num-speculative-tokens", "2", "--isl", "2048", "--osl", "1024", "--concurrency", "16")  # fmt: skip
    result = cli.json(*args)
    line = result["launch"].get("vllm")
    assert (line is None) if written is None else line.endswith(f"--speculative-config '{written}'")
    named = "the vllm line names MTP deepseek_mtp, as vLLM before 0.11.0 does" in (result["launch_note"] or "")
    assert named == (written is not None and "deepseek_mtp" in written)
    if running is not None:
        assert f"run the vllm line on a release of {running}" in result["launch_note"]
    if written is None:
        assert "no vllm line: vLLM 0.8.5 has no --speculative-config method=mtp" in result["launch_note"]


def test_each_release_before_method_mtp_names_it_by_model():
    """The names read in the wheels (``VLLM_MTP_BY_MODEL``): none before its first release, none from 0.11.0."""
    from mha_cli.core.engine.release_numbers import release_key
    from mha_cli.core.speculative import vllm_mtp_method

    assert vllm_mtp_method("deepseek_v3", release_key("0.8.5")) is None  # V1 takes no MTP: V0 alone
    assert vllm_mtp_method("deepseek_v3", release_key("0.9.0")) == "deepseek_mtp"
    assert vllm_mtp_method("qwen3_next", release_key("0.10.1")) is None  # 0.10.2 names it first
    assert vllm_mtp_method("qwen3_next", release_key("0.10.2")) == "qwen3_next_mtp"
    assert vllm_mtp_method("deepseek_v3", release_key("0.11.0")) is None  # method=mtp from here
    assert vllm_mtp_method("glm4_moe", release_key("0.10.2")) is None  # none named: the line says why not
    assert vllm_mtp_method("deepseek_v3", None) is None  # the latest release


def test_a_searched_pick_shows_the_per_token_figure_it_was_judged_on(cli):
    """Under speculative decoding --itl-ms is judged on TPOT; the pick's summary printed p99 ITL (464 ms against a
    30 ms target the pick met) (trial 264 #6). It prints the TPOT judged, and the JSON says which was read."""
    args = ["plan", "llama-3.1-8b", "--target", "2xh100", "--isl", "1024", "--osl", "128", "--itl-ms", "30", "--draft",
            "llama-3.2-1b", "--acceptance-length", "2.5"]  # fmt: skip
    found = cli.json(*args)
    sim = found["candidates"][found["chosen"]]["simulated"]
    assert sim["itl_read_as_tpot"] is True
    shown = cli.runner.invoke(app, args, env={"COLUMNS": "200"}).stdout
    assert f"p99 TPOT {sim['tpot_ms']['p99']:,.1f} ms" in shown and "p99 ITL" not in shown.split("pick (*)")[1]
    plain = cli.json(*args[:-4])
    assert "itl_read_as_tpot" not in plain["candidates"][plain["chosen"]]["simulated"]


def test_an_eagle3_head_with_its_own_vocabulary_holds_its_own_lm_head(cli, tmp_path):
    """Trial 394 #5: EAGLE-3 heads such as yuhuili/EAGLE3-LLaMA3.1-Instruct-8B carry ``draft_vocab_size`` 32,000 and
    an LM head of those rows (vLLM ``llama_eagle3.py``; ``_maybe_share_lm_head`` shares only a head the checkpoint
    lacks or that equals the target's); it was priced as shared. 32,000 x 4,096 x 2 B = 262,144,000 B more on one
    rank, its vocab-parallel half on each of 2; a head without the field shares the target's (the control)."""
    head = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 1,
            "vocab_size": 128256, "max_position_embeddings": 2048, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
            "tie_word_embeddings": False, "hidden_act": "silu"}  # fmt: skip
    shared, own = tmp_path / "shared.json", tmp_path / "own.json"
    shared.write_text(json.dumps(head))
    own.write_text(json.dumps(head | {"draft_vocab_size": 32000}))

    def drafter_bytes(draft: Path, tp: str, target: str) -> int:
        args = ("plan", "llama-3.1-8b", "--target", target, "--tp", tp, "--concurrency", "16", "--speculative-config",
                '{"method": "eagle3", "num_speculative_tokens": 3}', "--draft", str(draft), "--closed-form")  # fmt: skip
        return cli.json(*args)["speculative"]["drafter_weight_bytes_per_device"]

    assert drafter_bytes(own, "1", "h100") - drafter_bytes(shared, "1", "h100") == 32000 * 4096 * 2
    assert drafter_bytes(own, "2", "2xh100") - drafter_bytes(shared, "2", "2xh100") == 16000 * 4096 * 2
    full = tmp_path / "full.json"  # review 396 #5: a head naming the target's own size is a trained head of its own
    full.write_text(json.dumps(head | {"draft_vocab_size": 128256}))
    assert drafter_bytes(full, "1", "h100") - drafter_bytes(shared, "1", "h100") == 128256 * 4096 * 2
