"""DP attention with expert parallelism (``core.dp_attention``): DeepSeek-V3's weights and cache per GPU at dp 8 by
hand, the bytes of a step's gather and scatter (the engines' default) and of DeepEP's all-to-all, the search finding
the layout that holds 128K x 32 on 8 x H200 where tp 8 does not, the launch flags of both engines, and the
refusals."""

from __future__ import annotations

import shlex
from math import comb

import pytest

from mha_cli.core.cost.profile import CollectiveCost
from mha_cli.core.cost.step import op_seconds, step_time
from mha_cli.core.cost.work import decode_shape, forward_ops
from mha_cli.core.dp_attention import (
    default_a2a_backend,
    dispatch_bytes,
    dp_attention_experts,
    remote_destinations,
)
from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.params import count_params, params_per_rank
from mha_cli.core.presets import get_preset
from tests.spec_paths import copy_with

V3 = "tests/fixtures/hf_configs/deepseek-v3.json"
LONG = ["--target", "8xh200", "--isl", "126976", "--osl", "4096", "--concurrency", "32", "--closed-form"]
"""128K tokens a request (126,976 in + 4,096 out = 131,072), 32 users, on 8 x H200."""

D_MODEL, MOE_LAYERS, EXPERTS, D_FF_EXPERT = 7168, 58, 256, 2048
ROUTED = MOE_LAYERS * EXPERTS * 3 * D_MODEL * D_FF_EXPERT
"""DeepSeek-V3's routed experts: 58 MoE layers x 256 x (gate, up, down) of 7168 x 2048 = 653.9B."""
MLA_ATTENTION = (
    D_MODEL * 1536 + 1536 + 1536 * 128 * 192  # q down (a), its norm, q up (b): 128 heads of 128 + 64 rope
    + D_MODEL * (512 + 64) + 512  # kv down to the latent and the shared rope key, the latent's norm
    + 512 * 128 * (128 + 128)  # kv up: each head's key (nope part) and value
    + 128 * 128 * D_MODEL  # o
)  # fmt: skip
"""One layer's MLA attention weights, counted from the config's shapes."""


def test_each_dp_rank_holds_the_attention_whole_and_an_eighth_of_the_experts():
    v3 = get_preset("deepseek-v3")
    per_rank = params_per_rank(v3, 1, experts=dp_attention_experts(1, 8))
    assert MLA_ATTENTION == 187_107_328
    by_hand = (
        2 * 129_280 * D_MODEL  # the embedding and the untied LM head, whole (tp 1 per rank)
        + 61 * (MLA_ATTENTION + 2 * D_MODEL)  # every layer's attention whole, and its two norms
        + 3 * 3 * D_MODEL * 18_432  # the 3 dense layers' MLPs, whole
        + MOE_LAYERS * (EXPERTS * D_MODEL + 3 * D_MODEL * D_FF_EXPERT)  # each MoE layer's router and shared expert
        + MOE_LAYERS * 32 * 3 * D_MODEL * D_FF_EXPERT  # 32 of its 256 routed experts
        + D_MODEL  # the final norm
    )  # fmt: skip
    assert per_rank == by_hand == 98_856_229_888
    assert per_rank == count_params(v3).total - ROUTED * 7 // 8  # all but 7 of 8 routed experts
    assert ROUTED == 653_908_770_816


def test_dp_8_caches_its_own_requests_and_fits_where_tp_8_does_not(cli):
    dp = cli.json("plan", V3, *LONG, "--kv-dtype", "fp8", "--dp", "8")
    assert dp["deployment"] == {
        "tp": 1, "pp": 1, "replicas": 8, "gpus": 8, "expert_ranks": 8, "expert_parallel": True, "dp_attention": True,
        "moe_a2a_backend": "none",  # no --moe-a2a-backend: the engines' default gather and scatter
        "shares_experts": True,
    }  # fmt: skip
    memory = dp["memory"]
    # 32 / 8 = 4 requests per rank, each 131,072 tokens x 61 layers x 576 B (the fp8 latent and rope key)
    assert memory["kv_bytes_per_device"] == 4 * 131_072 * 61 * 576 == 18_421_383_168
    assert memory["fits"] is True and dp["queued_per_replica"] == 0
    assert (
        memory["experts_per_device"].startswith("32 of 256 experts whole")
        and "all-gather and reduce-scatter" in memory["experts_per_device"]
    )
    tp8 = cli.json("plan", V3, *LONG, "--kv-dtype", "fp8", "--tp", "8")  # the control: the latent on every rank
    assert tp8["memory"]["kv_bytes_per_device"] == 32 * 131_072 * 61 * 576
    assert tp8["memory"]["fits"] is False and tp8["queued_per_replica"] == 32 - tp8["running_per_replica"] > 0
    # the weights differ by the attention (and head) held whole against an eighth, the experts alike
    assert dp["memory"]["weight_bytes_per_device"] > tp8["memory"]["weight_bytes_per_device"]


def test_the_all_to_all_bytes_of_a_decode_step_by_hand():
    v3 = get_preset("deepseek-v3")
    # DeepSeek-V3 routes to 4 of 8 groups, one group a rank at 8: a token reaches 4 ranks, 3.5 of them others
    assert remote_destinations(v3, 8) == 7 * (1 - comb(7, 4) / comb(8, 4)) == 3.5
    deepep = dp_attention_experts(1, 8, "deepep")
    ops = forward_ops(v3, decode_shape(4, 131_072), tp=1, weight_dtype="fp8", experts=deepep)
    a2a = [op for op in ops if op.kind == "all_to_all"]
    assert len(a2a) == 1 and a2a[0].count == 2 * MOE_LAYERS and a2a[0].ranks == 8  # dispatch and combine, each layer
    assert a2a[0].bytes == 4 * D_MODEL * 2 * 3.5 == 200_704  # 4 tokens x 7168 x bf16 x 3.5 other ranks
    assert not any(op.kind == "all_reduce" for op in ops)  # tp 1: no all-reduce in attention
    link = CollectiveCost(latency_s=10e-6, bandwidth_bytes_per_s=450e9, link="nvlink")
    assert link.all_to_all_s(a2a[0].bytes, 8) == pytest.approx(10e-6 + 200_704 / 450e9)
    # top-1 routing without groups: a token goes to one expert, on another rank (N - 1) / N of the time
    top1 = get_preset("mixtral-8x7b")
    top1 = copy_with(top1, {"block.moe": top1.block.moe.model_copy(update={"n_active_experts": 1})})
    assert dispatch_bytes(top1, 10, 8, 2) == pytest.approx(10 * 4096 * 2 * 7 / 8)
    # 256 ungrouped experts, top 8: a token reaches 8 x (1 - C(224, 8) / C(256, 8)) devices
    ungrouped = copy_with(v3, {"block.moe": v3.block.moe.model_copy(update={"n_group": 1, "topk_group": 1})})
    assert remote_destinations(ungrouped, 8) == pytest.approx(7 * (1 - comb(224, 8) / comb(256, 8)))


def test_the_step_prices_the_all_to_all_on_the_link():
    v3 = get_preset("deepseek-v3")
    ops = forward_ops(v3, decode_shape(4, 4096), tp=1, experts=dp_attention_experts(1, 8, "deepep"))
    a2a = next(op for op in ops if op.kind == "all_to_all")
    from mha_cli.core.cost.priors import prior_profile
    from mha_cli.core.targets import resolve_target

    profile = prior_profile(resolve_target("8xh200").target)
    seconds, _ = op_seconds(a2a, profile, 1)
    assert seconds == pytest.approx(profile.collective.latency_s + a2a.bytes / profile.collective.bandwidth_bytes_per_s)


def test_the_gather_and_scatter_bytes_of_a_decode_step_by_hand():
    """The engines' default (no DeepEP): every rank's tokens all-gathered to all 8 before each MoE layer, the experts'
    sums reduce-scattered back; whatever the routing, a rank receives its 7 peers' tokens and sends them their sums."""
    v3 = get_preset("deepseek-v3")
    assert {default_a2a_backend(engine) for engine in ("sglang", "vllm")} == {"none"}  # the latest generations
    assert {default_a2a_backend(None, old) for old in ("sglang-0.4", "vllm-v1")} == {"none"}
    ops = forward_ops(v3, decode_shape(4, 4096), tp=1, weight_dtype="fp8", experts=dp_attention_experts(1, 8))
    assert not any(op.kind in ("all_to_all", "all_reduce") for op in ops)
    gather = [op for op in ops if op.name == "experts' gather and reduce-scatter"]
    assert len(gather) == 1 and gather[0].count == 2 * MOE_LAYERS and gather[0].ranks == 8  # gather and scatter
    assert gather[0].bytes == 8 * 4 * D_MODEL * 2 == 458_752  # the gathered buffer: 8 ranks x 4 tokens x 7168 x bf16
    per_rank = 7 * 4 * D_MODEL * 2  # 4 tokens x 7168 x 2 B from each of 7 peers (and the sums back to them)
    assert per_rank == 401_408 == gather[0].bytes * 7 / 8  # a ring moves 7/8 of the buffer through each rank
    link = CollectiveCost(latency_s=10e-6, bandwidth_bytes_per_s=450e9, link="nvlink")
    assert link.all_gather_s(gather[0].bytes, 8) == pytest.approx(10e-6 + 401_408 / 450e9)
    # DeepEP sends each token to its 3.5 other ranks: half the gather's 7 (dispatch_bytes: 4 x 7168 x 2 x 3.5)
    assert dispatch_bytes(v3, 4, 8, 2) == per_rank / 2


@pytest.mark.parametrize(("batch", "deepep_saves_at_least"), [(1, 0.0), (256, 0.15)])
def test_deepep_beats_the_gather_where_the_bytes_count(batch, deepep_saves_at_least):
    """The control: on 8 x H200's prior, DeepEP's all-to-all moves half the gather's bytes, so at 256 sequences a
    rank its decode step's collectives take clearly less time (the bytes dominate); at one sequence both are the two
    collectives' latency per layer, within 1% (this model gives DeepEP no fixed cost of its own, so it never loses)."""
    from mha_cli.core.cost.priors import prior_profile
    from mha_cli.core.targets import resolve_target

    v3, profile = get_preset("deepseek-v3"), prior_profile(resolve_target("8xh200").target, "fp8")
    times = {}
    for backend in ("none", "deepep"):
        ops = forward_ops(v3, decode_shape(batch, 4096), tp=1, weight_dtype="fp8",
                          experts=dp_attention_experts(1, 8, backend))  # fmt: skip
        times[backend] = step_time(ops, profile).collective_s
    saved = 1 - times["deepep"] / times["none"]
    assert deepep_saves_at_least <= saved
    assert saved < 0.01 if batch == 1 else saved < 0.5  # never more than the halved bytes


def test_over_two_nodes_the_gather_runs_at_the_network_rate_and_deepep_wins(cli):
    """dp 16 over 2 x 8 x H200, 64 sequences a rank: the gather is a ring over both nodes, so each of its 2 x 58
    collectives moves 15/16 of 16 x 64 tokens x 7168 x 2 B = 13.76 MB through every GPU's 50 GB/s InfiniBand NDR port
    (the line rate: a floor); DeepEP sends only the tokens' off-node share over it (53%, the note)."""
    args = ("plan", V3, "--target", "2x8xh200", "--tp", "1", "--dp", "16", "--concurrency", "1024", "--closed-form")
    gather, deepep = cli.json(*args), cli.json(*args, "--moe-a2a-backend", "deepep")
    per_op_floor = 15 / 16 * 16 * 64 * D_MODEL * 2 / 50e9  # 0.275 ms at the line rate
    assert gather["decode_step"]["collective_s"] >= 2 * MOE_LAYERS * per_op_floor
    assert deepep["decode_step"]["collective_s"] < gather["decode_step"]["collective_s"] / 3
    assert deepep["itl_ms"] < gather["itl_ms"] / 2


def test_the_search_finds_dp_attention_at_128k_x_32_and_tp_8_queues(cli, request):
    found = cli.json("plan", V3, *LONG, "--kv-dtype", "fp8")
    assert any(
        line.startswith(
            "one server of 8 GPUs, 8 DP-attention ranks of tp 1 x pp 1, the experts whole over all 8 ranks: 6 request(s)"
            " at once per attention rank"
        )
        for line in found["layouts"]
    )
    dpa = [c for c in found["candidates"] if c["deployment"]["dp_attention"]]
    holding = [c for c in dpa if c["concurrency"] == 32 and c["queued_per_replica"] == 0 and c["memory"]["fits"]]
    assert {(c["deployment"]["tp"], c["deployment"]["replicas"]) for c in holding} == {(1, 8), (2, 4)}
    tp8 = [c for c in found["candidates"] if c["deployment"]["tp"] == 8]
    assert tp8 and all(c["queued_per_replica"] > 0 for c in tp8)  # the control: 9 of 32 at once
    # the checkpoint's fp8 weights with a bf16 cache: only pipeline stages, each caching its own layers' latent (the
    # latent is whole on every tensor-parallel rank), hold 32 at once
    bf16 = cli.json("plan", V3, *LONG, "--ttft-ms", "120000")
    assert {c["deployment"]["pp"] > 1 for c in bf16["candidates"] if c["queued_per_replica"] == 0} == {True}
    request.getfixturevalue("one_stage_search")  # no one-stage layout holds 32 at once (dp 8: 3 a rank)
    bf16 = cli.json("plan", V3, *LONG, "--ttft-ms", "120000")
    assert not any(c["queued_per_replica"] == 0 for c in bf16["candidates"])
    assert bf16["chosen"] is None and bf16["ways_out"][0]["change"] == "--kv-dtype fp8"  # the way to the fit above
    assert bf16["ways_out"][0]["fits"] is True


def test_sglang_prices_each_dp_rank_at_its_share_of_the_chunked_prefill(cli):
    """SGLang under DP attention runs chunked_prefill_size // dp_size a rank (``_handle_data_parallelism``): its
    H200 default 8192 over 8 ranks is 1024 tokens a step; with --chunked-prefill-size 4096, 512."""
    plan = cli.json("plan", V3, "--target", "8xh200", "--dp", "8", "--engine", "sglang", "--closed-form")
    assert plan["memory"]["engine"]["max_num_batched_tokens"] == 1024  # 8192 // 8
    given = cli.json("plan", V3, "--target", "8xh200", "--dp", "8", "--engine", "sglang", "--closed-form",
                     "--chunked-prefill-size", "4096")  # fmt: skip
    assert given["memory"]["engine"]["max_num_batched_tokens"] == 512  # 4096 // 8
    tp8 = cli.json("plan", V3, "--target", "8xh200", "--tp", "8", "--engine", "sglang", "--closed-form")
    assert tp8["memory"]["engine"]["max_num_batched_tokens"] == 8192  # the control: no DP attention, undivided


@pytest.mark.parametrize("flag", ["--dp", "--data-parallel-size", "--dp-size"])
def test_dp_pins_one_deployment_under_each_engines_name(cli, flag):
    plan = cli.json("plan", V3, *LONG, "--kv-dtype", "fp8", flag, "4")
    assert plan["deployment"]["tp"] == 2 and plan["deployment"]["replicas"] == 4 and plan["deployment"]["dp_attention"]


def test_the_search_launches_dp_attention_with_each_engines_flags(cli):
    """Short requests at 1,024 users: the search picks dp 8 (the engines' recipe for DeepSeek at high load)."""
    found = cli.json("plan", V3, "--target", "8xh200", "--isl", "1024", "--osl", "1024", "--concurrency", "1024",
                     "--closed-form")  # fmt: skip
    pick = found["candidates"][found["chosen"]]["deployment"]
    assert pick["dp_attention"] and (pick["tp"], pick["replicas"]) == (1, 8)
    vllm = shlex.split(found["launch"]["vllm"])

    def value(words: list[str], name: str) -> str:
        return words[words.index(name) + 1]

    assert value(vllm, "--tensor-parallel-size") == "1" and value(vllm, "--data-parallel-size") == "8"
    # priced with the engines' default gather and scatter: no DeepEP flag (each engine's default dispatch)
    assert "--enable-expert-parallel" in vllm and "--all2all-backend" not in vllm
    # per data-parallel rank, the max_num_seqs each rank's pool was priced at (vLLM's H200 default), not the 1,024 / 8
    # running there: a cap of 128 would start another pool (core.cost.search.launch_commands)
    assert value(vllm, "--max-num-seqs") == str(
        found["candidates"][found["chosen"]]["memory"]["engine"]["max_num_seqs"]
    )
    assert value(vllm, "--max-num-seqs") == "1024"
    # SGLang's line would ask --chunked-prefill-size 8 x 8192: SGLang sizes its reserve from the whole chunk (1.5 MiB
    # a token, 96 GiB) before dividing it over the ranks (0.5.9 server_args.py: _handle_gpu_memory_settings, then
    # _handle_data_parallelism), and stops: no line, the reason said (trial 365 #1)
    assert value(vllm, "--max-num-batched-tokens") == "8192" and "sglang" not in found["launch"]
    assert "sglang: no line: SGLang would not start it as written" in found["launch_note"]
    assert "--chunked-prefill-size 65536" in found["launch_note"] and "Not enough memory" in found["launch_note"]
    # the control: 1,024 tokens a rank, 8 x 1,024 on SGLang's line, which starts
    small = cli.json("plan", V3, "--target", "8xh200", "--dp", "8", "--isl", "1024", "--osl", "1024", "--concurrency",
                     "1024", "--closed-form", "--max-num-batched-tokens", "1024")  # fmt: skip
    sglang = shlex.split(small["launch"]["sglang"])
    # one server of 8 attention ranks: SGLang 0.5.22 on name them --attn-dp-size, --dp-size counting replicas (1)
    assert value(sglang, "--tp-size") == "8" and value(sglang, "--attn-dp-size") == "8"
    assert value(sglang, "--dp-size") == "1" and "--enable-dp-attention" not in sglang
    assert value(sglang, "--ep-size") == "8" and "--moe-a2a-backend" not in sglang
    # the same cap per rank on SGLang's line: it divides --max-running-requests over its 8 attention ranks
    assert value(sglang, "--max-running-requests") == str(8 * 1024)
    # and its --chunked-prefill-size too: vLLM's 1024 a rank is 8 x 1024 on SGLang's line
    assert value(sglang, "--chunked-prefill-size") == "8192"
    plain = cli.json("plan", V3, "--target", "8xh200", "--tp", "8", "--concurrency", "8", "--closed-form")
    assert not plain["deployment"]["dp_attention"]  # the control: tp 8 holds one replica, no DP attention


def test_sglang_0_4_takes_deepep_as_enable_deepep_moe(cli):
    """SGLang 0.4.9 names DeepEP --enable-deepep-moe (--moe-a2a-backend came in 0.4.10.post2, the old flag deprecated
    for it): a --engine sglang@0.4.9 line says so; sglang@0.4 (0.4.10.post2) and the latest, --moe-a2a-backend
    deepep (trial 368 #7: sglang@0.4 had been written the deprecated flag)."""
    args = ("plan", V3, "--target", "8xh200", "--concurrency", "1024", "--closed-form", "--moe-a2a-backend", "deepep")
    for engine, flag, not_flag in (("sglang@0.4.9", "--enable-deepep-moe", "--moe-a2a-backend"),
                                   ("sglang@0.4", "--moe-a2a-backend", "--enable-deepep-moe"),
                                   ("sglang", "--moe-a2a-backend", "--enable-deepep-moe")):  # fmt: skip
        found = cli.json(*args, "--engine", engine)
        assert found["candidates"][found["chosen"]]["deployment"]["moe_a2a_backend"] == "deepep"
        sglang = shlex.split(found["launch"]["sglang"])
        assert flag in sglang and not_flag not in sglang, engine


def test_deepep_asked_is_priced_and_launched_with_each_engines_flag(cli):
    """--moe-a2a-backend deepep: the search's DP attention candidates priced with DeepEP's all-to-all and launched with
    SGLang's --moe-a2a-backend deepep and vLLM's --all2all-backend deepep_low_latency."""
    found = cli.json("plan", V3, "--target", "8xh200", "--isl", "1024", "--osl", "1024", "--concurrency", "1024",
                     "--closed-form", "--moe-a2a-backend", "deepep", "--max-num-batched-tokens", "1024")  # fmt: skip
    pick = found["candidates"][found["chosen"]]["deployment"]
    assert pick["dp_attention"] and pick["moe_a2a_backend"] == "deepep"
    vllm, sglang = shlex.split(found["launch"]["vllm"]), shlex.split(found["launch"]["sglang"])
    assert vllm[vllm.index("--all2all-backend") + 1] == "deepep_low_latency"
    assert sglang[sglang.index("--moe-a2a-backend") + 1] == "deepep"
    assert "VLLM_ALL2ALL_BACKEND" not in (found["launch_note"] or "")  # vLLM 0.21 and later: the flag alone
    older = cli.json("plan", V3, "--target", "8xh200", "--isl", "1024", "--osl", "1024", "--concurrency", "1024",
                     "--closed-form", "--moe-a2a-backend", "deepep", "--engine", "vllm@0.10")  # fmt: skip
    assert older["candidates"][older["chosen"]]["deployment"]["moe_a2a_backend"] == "deepep"
    assert "VLLM_ALL2ALL_BACKEND=deepep_low_latency" in older["launch_note"]  # before --all2all-backend (0.11.1)
    pinned = cli.json("plan", V3, "--target", "8xh200", "--dp", "8", "--concurrency", "256", "--closed-form",
                      "--moe-a2a-backend", "deepep")  # fmt: skip
    default = cli.json("plan", V3, "--target", "8xh200", "--dp", "8", "--concurrency", "256", "--closed-form")
    assert pinned["deployment"]["moe_a2a_backend"] == "deepep" and default["deployment"]["moe_a2a_backend"] == "none"
    assert pinned["decode_step"]["collective_s"] < default["decode_step"]["collective_s"]  # half the bytes
    assert any("DeepEP's all-to-all" in note for note in pinned["notes"])
    assert any("all-gather and reduce-scatter" in note for note in default["notes"])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["plan", "llama-3-8b", "--target", "8xh100", "--dp", "8", "--enable-dp-attention"],
            "has none (a dense model)",
        ),
        (["plan", V3, "--target", "8xh200", "--tp", "8", "--moe-a2a-backend", "deepep"], "add --dp"),
        (["plan", V3, "--target", "8xh200", "--dp", "8", "--moe-a2a-backend", "nccl"], "give none"),
        (["plan", "llama-3-8b", "--target", "8xh100", "--moe-a2a-backend", "deepep"], "has none: leave it out"),
        (["plan", V3, "--target", "8xh200", "--dp", "3"], "--dp 3 must divide the 8 GPU(s)"),
        (
            ["plan", V3, "--target", "8xh200", "--dp", "1", "--enable-dp-attention"],
            "needs 2 or more data-parallel ranks",
        ),
        (["plan", V3, "--target", "8xh200", "--dp", "8", "--tp", "2"], "must equal the 8 GPU(s)"),
        (["plan", V3, "--target", "8xh200", "--dp", "8", "--tp", "8"], "add --enable-dp-attention"),
        (["plan", V3, "--target", "8xh200", "--tp", "8", "--enable-dp-attention"], "give --dp (SGLang's --dp-size)"),
        (
            ["plan", V3, "--target", "8xh200", "--dp", "3", "--tp", "8", "--enable-dp-attention"],
            "--tp 8 counts every GPU of the server, as SGLang's --tp-size, and must be a multiple of --dp 3",
        ),
        (
            ["plan", V3, "--target", "8xh200", "--dp", "8", "--tp", "16", "--enable-dp-attention"],
            "give --tp 8 for the 8 GPU(s), not 16",
        ),
        (
            ["plan", V3, "--target", "8xh200", "--dp", "8", "--tp", "8", "--enable-dp-attention", "--engine", "vllm"],
            "--enable-dp-attention is SGLang's flag",
        ),
        (
            ["plan", "llama-3-8b", "--target", "8xh100", "--dp", "8", "--tp", "8"],
            "leave out --tp (it follows from --dp)",
        ),
        (
            ["plan", V3, "--target", "8xh200", "--dp", "8", "--engine", "trtllm"],
            "enable_attention_dp, an --extra_llm_api_options key, is not priced",
        ),
    ],
    ids=[
        "dense",
        "a2a-without-dp",
        "a2a-unknown",
        "a2a-dense",
        "not-dividing",
        "one-rank",
        "tp-too",
        "sglang-tp",
        "sglang-no-dp",
        "sglang-not-dividing",
        "sglang-tp-past-gpus",
        "sglang-flag-on-vllm",
        "dense-tp-too",
        "trtllm",
    ],
)
def test_refusals_are_one_line(cli, args, said):
    result = cli.run(*args)
    assert result.exit_code == EXIT_BAD_INPUT
    assert said in result.output and len(result.output.strip().splitlines()) == 1


def test_an_sglang_line_of_pipeline_stages_is_judged_by_its_reserve(cli):
    """Trial 385 #1: under pipeline stages the sglang line was never checked, so tp 1 x pp 2 with 8 DP-attention
    ranks on 2 x 8 H100s wrote --chunked-prefill-size 65,536 (8 ranks x vLLM's 8,192), whose default reserve (1.5 MiB
    a token, 96 GiB) SGLang sizes before dividing it over the ranks: it would not start, as the same line without
    stages is left out. The control: a 1,024-token step a rank (8,192 in all) is written."""
    args = ("plan", V3, "--target", "2x8xh100", "--tp", "1", "--pp", "2", "--dp", "8", "--isl", "2048", "--osl", "512",
            "--concurrency", "64", "--closed-form")  # fmt: skip
    staged = cli.json(*args)
    assert "sglang" not in staged["launch"] and "vllm" in staged["launch"]
    assert (
        "sglang: no line: SGLang would not start it as written: SGLang's reserve for a 65536-token"
        in (staged["launch_note"])
    )
    small = cli.json(*args, "--max-num-batched-tokens", "1024")
    assert "--chunked-prefill-size 8192" in small["launch"]["sglang"] and "--pp-size 2" in small["launch"]["sglang"]


def test_sglangs_dp_attention_line_pastes(cli):
    """SGLang's ``--tp 8 --dp 8 --enable-dp-attention`` (its --tp counts every GPU) is mha's --dp 8: eight ranks of
    one GPU; it was refused as tp 8 x dp 8 on 8 GPUs, and the flag --help named did not exist (trial 297 #3)."""
    base = ["plan", V3, "--target", "8xh200", "--engine", "sglang", "--concurrency", "64", "--closed-form"]
    pasted = cli.json(*base, "--tp", "8", "--dp", "8", "--enable-dp-attention")
    assert pasted == cli.json(*base, "--dp", "8")
    assert pasted["deployment"]["tp"] == 1 and "--tp-size 8" in pasted["launch"]["sglang"]
    assert cli.json(*base, "--tp", "8")["deployment"]["tp"] == 8  # the control: without the flag, one tp-8 server
    # trial 381 #2: left without --engine, SGLang's flag was priced as vLLM (the default), which refuses it when named
    unnamed = [arg for arg in base if arg not in ("--engine", "sglang")]
    assert cli.json(*unnamed, "--tp", "8", "--dp", "8", "--enable-dp-attention") == pasted


def test_data_parallel_on_a_dense_model_is_replicas(cli):
    """vLLM's --data-parallel-size (SGLang's --dp-size) on a dense model starts replicas, as mha's own launch lines
    write them: --dp 2 on 8 GPUs is tp 4 x 2 replicas, not a refusal (trial 297 #4)."""
    base = ["plan", "llama-3.1-70b", "--target", "8xh100", "--concurrency", "64", "--closed-form"]
    replicas = cli.json(*base, "--dp", "2")
    assert replicas == cli.json(*base, "--tp", "4") == cli.json(*base, "--data-parallel-size", "2", "--tp", "4")
    assert "--tensor-parallel-size 4" in replicas["launch"]["vllm"]
    assert "--data-parallel-size 2" in replicas["launch"]["vllm"]
    refused = cli.run(*base, "--dp", "4", "--tp", "4")
    assert refused.exit_code == EXIT_BAD_INPUT and "must equal the 8 GPU(s)" in refused.stderr
    assert "--enable-dp-attention" not in refused.stderr  # not offered where a dense model would refuse it


def test_a_config_files_dp_on_a_dense_model_is_replicas_too(cli, tmp_path):
    """The file's deployment.dp was refused naming --dp and --expert-parallel (review 298 #6), while --dp planned."""
    design = tmp_path / "design.yaml"
    assert cli.run("recommend", "--params", "1B", "--seq", "2048", "--out", str(design)).exit_code == 0
    design.write_text(design.read_text().replace("deployment:\n", "deployment:\n  dp: 2\n", 1))
    found = cli.json("plan", str(design), "--target", "2xh100", "--concurrency", "4", "--closed-form")
    assert (found["deployment"]["tp"], found["deployment"]["replicas"]) == (1, 2)


def test_kv_takes_dp_and_its_ways_out_offer_dp_attention_each_pasted(cli):
    """128K x 32 on 8 x H200 with the checkpoint's bf16 cache: tp 8 holds 4; 4 ranks of tp 2 sharing the experts
    with an fp8 cache hold 32. mha's --tp 2 on 8 GPUs is that layout (vLLM -tp 2 -dp 4, not a server of tp 2 holding
    every expert): the way out names the ranks and their flags, once (not again as --tp 2 --dp 4), and the explicit
    DP-attention form pasted fits too."""
    args = ["kv", V3, "--target", "8xh200", "--seq", "128K", "--batch", "32"]
    report = cli.json(*args)
    assert report["memory"]["fits"] is False and report["memory"]["max_sequences"] == 4
    changes = [way["change"] for way in report["ways_out"]]
    pair = next(way for way in report["ways_out"] if way["change"] == "--kv-dtype fp8 --tp 2")
    assert "4 DP-attention ranks of tp 2" in pair["text"]
    assert "vllm serve --tensor-parallel-size 2 --data-parallel-size 4" in pair["text"]
    assert "--kv-dtype fp8 --tp 2 --dp 4" not in changes  # the same 4 ranks of tp 2, named once
    assert cli.json(*args, "--kv-dtype", "fp8", "--tp", "2")["memory"]["fits"] is True
    pasted = cli.json(*args, *shlex.split("--kv-dtype fp8 --tp 2 --dp 4"))
    assert pasted["memory"]["fits"] is True and pasted["deployment"]["dp"] == 4
    experts = pasted["memory"]["experts_per_device"]
    assert pasted["deployment"]["expert_parallel"] is True and "all-gather and reduce-scatter" in experts
    dp8 = cli.json(*args, "--kv-dtype", "fp8", "--dp", "8")
    assert dp8["memory"]["max_sequences"] == 48 and dp8["memory"]["kv_bytes_per_device"] == 18_421_383_168
    assert dp8["memory"]["weight_bytes_per_device"] == 100_840_687_968  # the plan's: same weights, same rules
    alone = cli.json(*args, "--dp", "8")  # why the fp8 cache is part of the way out: 3 a rank in bf16
    assert alone["memory"]["fits"] is False and alone["memory"]["max_sequences"] == 24


def test_check_names_the_dp_attention_ranks_a_smaller_tp_of_an_moe_model_runs(cli):
    """``check``'s --tp 2 way out on 8 GPUs is 4 ranks sharing the experts: said so, with the flags that run it."""
    report = cli.json("check", V3, "--target", "8xh200", "--seq", "128K", "--batch", "32")
    said = next(finding["message"] for finding in report["findings"] if finding["id"] == "MHA026")
    assert "--kv-dtype fp8 --tp 2 (together: one alone is not enough; 4 DP-attention ranks of tp 2" in said
    # the line that runs it carries the fp8 cache it depends on (trial 326 #5)
    assert "run as vllm serve --tensor-parallel-size 2 --data-parallel-size 4 --kv-cache-dtype fp8;" in said


@pytest.mark.parametrize(
    ("engine", "ranks", "flags"),
    [
        ("sglang@0.5.21", "2 DP-attention ranks of tp 4", ", run as python -m sglang.launch_server --tp-size 8 --dp-size 2 --enable-dp-attention --kv-cache-dtype fp8_e4m3;"),
        ("sglang@0.5.22", "2 DP-attention ranks of tp 4", ", run as python -m sglang.launch_server --tp-size 8 --dp-size 1 --attn-dp-size 2 --kv-cache-dtype fp8_e4m3;"),
        ("sglang", "2 DP-attention ranks of tp 4", ", run as python -m sglang.launch_server --tp-size 8 --dp-size 1 --attn-dp-size 2 --kv-cache-dtype fp8_e4m3;"),
        ("vllm@0.8.3", "4 DP-attention ranks of tp 2", ", run as vllm serve --tensor-parallel-size 2 --data-parallel-size 4;"),
    ],
)  # fmt: skip
def test_the_dp_attention_ranks_way_out_writes_the_flags_of_the_release_priced(cli, engine, ranks, flags):
    """A smaller tp's way out on 8 GPUs runs DP-attention ranks sharing the experts: its flags in the form the
    release priced takes, as the launch lines write them (core.engine.launch_forms): SGLang's --attn-dp-size from
    0.5.22, --dp-size N --enable-dp-attention before it; vLLM's --data-parallel-size from 0.8.3 (before it the
    replicas are separate servers: test_vllm_before_0_8_3_runs_no_dp_attention); with the fp8 cache the SGLang
    ways pair with it, its --kv-cache-dtype (trial 326 #5: the line left it out)."""
    report = cli.json("kv", V3, "--target", "8xh200", "--seq", "128K", "--batch", "16", "--engine", engine)
    texts = [way["text"] for way in report["ways_out"] if "DP-attention ranks" in way["text"]]
    assert len(texts) == 1 and f"{ranks} sharing the experts in one server{flags}" in texts[0]


def test_check_and_recommend_never_print_dp_which_they_do_not_take(cli):
    recommend = cli.json("recommend", "--params", "671B", "--active-params", "37B", "--seq", "128K", "--batch", "32",
                         "--target", "8xh200", "--variant", "MLA")  # fmt: skip
    assert recommend["ways_out"] and not any("--dp" in way["change"] for way in recommend["ways_out"])
    refused = cli.run("kv", V3, "--seq", "128K", "--dp", "8")
    assert refused.exit_code == EXIT_BAD_INPUT and "add --target" in refused.output


@pytest.mark.parametrize(
    ("engine", "release"), [("vllm@0.7", "vLLM 0.7.x"), ("vllm@0.8.0", "vLLM 0.8.0"), ("vllm@0.8.2", "vLLM 0.8.2")]
)
def test_vllm_before_0_8_3_runs_no_dp_attention(cli, engine, release):
    """vLLM's --data-parallel-size is first in 0.8.3 (core.engine.flags, read in the wheels): before it --dp is one
    line, the search tries no DP-attention layout, and a smaller tp's replicas are separate servers, each holding
    its own copy of the experts (tp 2 x 4 replicas: all 256 at 1/2 of their width, not 1/8)."""
    missing = f"{release} has no --data-parallel-size (first in 0.8.3)"
    args = ("plan", "deepseek-v3", "--target", "8xh200", "--isl", "1024", "--osl", "128", "--closed-form")
    result = cli.run(*args, "--dp", "8", "--engine", engine)
    assert result.exit_code == 2 and f"{missing}, so no DP attention: use --engine vllm@0.8.3" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    searched = cli.json(*args, "--concurrency", "64", "--engine", engine)
    assert not any(c["deployment"].get("dp_attention") for c in searched["candidates"])
    kv_args = ("kv", V3, "--target", "8xh200", "--seq", "8K", "--batch", "16", "--tp", "2", "--engine")
    kv = cli.json(*kv_args, engine)
    assert kv["memory"]["replicas"] == 4
    assert kv["memory"]["experts_per_device"] == "all 256 experts at 1/2 of their width (tensor-sharded over 2 ranks)"
    assert any(f"{missing}: its 4 replicas are priced as separate servers" in note for note in kv["engine"]["notes"])
    shared = cli.json(*kv_args, "vllm@0.8.3")["memory"]["experts_per_device"]
    assert shared == "all 256 experts at 1/8 of their width (tensor-sharded over 8 ranks)"


def test_sglangs_attn_dp_size_names_the_same_ranks_as_dp(cli):
    """SGLang 0.5.22's --attn-dp-size (its replacement for --dp-size N --enable-dp-attention) is --dp's alias."""
    args = ("plan", V3, "--target", "8xh200", "--concurrency", "64", "--closed-form", "--engine", "sglang")
    named = cli.json(*args, "--attn-dp-size", "8")["deployment"]
    assert named == cli.json(*args, "--dp", "8")["deployment"] and named["dp_attention"] and named["replicas"] == 8


def test_the_header_says_one_server_of_attention_ranks(cli):
    """``--tp-size 8 --attn-dp-size 8`` is one SGLang server of 8 GPUs with 8 attention ranks, not 8 replicas."""
    args = ("plan", V3, "--target", "8xh200", "--engine", "sglang", "--dp", "8", "--concurrency", "64", "--closed-form")
    result = cli.run(*args)
    assert result.exit_code == 0, result.output
    header = " ".join(result.output.split("\n")[:3]).replace("\n", " ")
    assert "one server of 8 GPUs, 8 DP-attention ranks of tp 1 x pp 1" in " ".join(header.split())
    assert "replica" not in header and "8 running per attention rank" in " ".join(header.split())
    found = cli.json(*args)
    assert (found["deployment"]["replicas"], found["deployment"]["gpus"]) == (8, 8)  # the JSON keeps its keys


def test_kvs_memory_plan_says_one_server_of_attention_ranks(cli):
    """``mha kv --dp 8``: the memory plan's title and rows name one server's 8 DP-attention ranks, not replicas; the
    control, --tp 2 on 8 GPUs of a dense model, keeps its 4 replicas."""
    result = cli.run("kv", V3, "--target", "8xh200", "--engine", "sglang", "--dp", "8")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "one server of 8 GPUs, 8 DP-attention ranks of tp 1" in text and "tp 1 x 8 replicas" not in text
    assert "(every GPU of the server" in text
    dense = cli.run("kv", "llama-3-8b", "--target", "8xh100", "--tp", "2")
    assert "tp 2 x 4 replicas" in " ".join(dense.output.split()) and "DP-attention" not in dense.output


def test_replicas_sharing_the_experts_are_one_server_of_attention_ranks_not_replicas(cli):
    """vLLM runs DeepSeek-V3 on 8 x H200 at tp 1 as one server, ``--data-parallel-size 8``, its experts split over
    all 8 ranks (docs/serving/data_parallel_deployment.md): not 8 replicas each holding the 627 GiB of weights."""
    found = cli.json("plan", V3, "--target", "8xh200", "--closed-form")
    assert not any(layout.startswith("tp 1 x pp 1 x 8 replica(s)") for layout in found["layouts"])
    assert any(
        layout.startswith(
            "one server of 8 GPUs, 8 DP-attention ranks of tp 1 x pp 1, the experts split by width over all 8 ranks:"
        )
        and layout.endswith("per attention rank")
        for layout in found["layouts"]
    )
    assert "tp 8 x pp 1 x 1 replica(s): " in "\n".join(found["layouts"])  # one tp group is one replica still


@pytest.mark.parametrize("chunk", [None, "500"])
@pytest.mark.usefixtures("one_stage_search")  # the pick is DP attention's
def test_an_sglang_plans_vllm_line_runs_the_same_ranks_cap_and_prefill(cli, chunk):
    """Priced on SGLang 0.4.6, a DP-attention rank's budget is its share of --chunked-prefill-size (8192 // 8 = 1,024;
    500 // 4 = 125), prefill tokens alone: SGLang decodes in steps of their own (--enable-mixed-chunk is off). The vLLM
    line keeps the rank's cap of requests the plan priced (it used to clamp it to that chunk: 125) and takes one step
    budget for both, the chunk plus a decode token for each of them. The rank's cap is 0.4.6's default, 4,097: its
    request pool's estimate at the 4,096 ceiling + 1 row (``core.engine.sglang_running``; the KV pool holds some
    290,000 tokens a rank at a 2,048-token context)."""
    args = ["plan", V3, "--target", "8xh200", "--engine", "sglang@0.4.6", "--isl", "1024", "--osl", "1024",
            "--closed-form", *(["--max-num-batched-tokens", chunk] if chunk else [])]  # fmt: skip
    found = cli.json(*args)
    pick = found["candidates"][found["chosen"]]
    engine = pick["memory"]["engine"]
    vllm = shlex.split(found["launch"]["vllm"])
    assert pick["deployment"]["dp_attention"] and engine["max_num_seqs"] == 4097
    assert vllm[vllm.index("--max-num-seqs") + 1] == "4097"
    step = int(vllm[vllm.index("--max-num-batched-tokens") + 1])
    # at --max-num-batched-tokens 500 the pick is 4 DP-attention ranks of tp 2 again (500 // 4 = 125) after the
    # 2026-12-03 gemmramp refit c9a7fdd; the refit before it picked 2 ranks of tp 4 (500 // 2 = 250: 4,347)
    assert step == engine["max_num_batched_tokens"] + 4097 == (5_121 if chunk is None else 4_222)


def test_the_simulated_loop_of_dp_attention_counts_attention_ranks_not_replicas(cli):
    result = cli.run("plan", V3, "--target", "8xh200", "--dp", "8", "--isl", "1024", "--osl", "1024")
    said = " ".join(result.output.split())
    assert result.exit_code == 0 and "busiest of 8 attention rank(s)" in said
    assert "over all attention ranks" in said and "replica" not in said.split("simulated serving loop")[1][:400]


def test_dp_times_pp_past_the_gpus_names_both_and_working_ranks():
    """``--dp 8 --pp 2`` on 8 GPUs: 8 divides 8, so "--dp 8 must divide the 8 GPU(s)" contradicted itself (found by
    newuser trial 229); the limit is dp x pp, and each --dp offered fits with --pp 2."""
    from mha_cli.core.dp_attention import dp_tp
    from mha_cli.core.errors import BadInputError

    with pytest.raises(BadInputError) as caught:
        dp_tp(8, None, 8, pp=2)
    assert caught.value.message == "--dp 8 x --pp 2 must divide the 8 GPU(s) of the target: pick a --dp such as 4, 2"
    assert [dp_tp(dp, None, 8, pp=2) for dp in (4, 2)] == [1, 2]
    with pytest.raises(
        BadInputError, match=r"^--dp 3 must divide the 8 GPU\(s\) of the target: pick a divisor such as"
    ):
        dp_tp(3, None, 8)


def test_shared_experts_over_pipeline_stages_are_each_stages_own():
    """Trial 326 #6: "2 DP-attention ranks of tp 1 x pp 4, the experts whole over all 2 ranks" read as the experts
    on 2 GPUs; under pp each stage holds its layers' experts over its own GPUs (2 of the 8 here). At pp 1 the words
    stay as they were (the control)."""
    from mha_cli.core.cost.serving import layout_words

    assert layout_words(1, 4, 2, dp_attention=False, expert_parallel=True, shared_experts=True) == (
        "one server of 8 GPUs, 2 DP-attention ranks of tp 1 x pp 4, the experts whole over the 2 GPUs of each of the 4"
        " stages"
    )
    assert layout_words(1, 1, 8, dp_attention=False, shared_experts=True) == (
        "one server of 8 GPUs, 8 DP-attention ranks of tp 1 x pp 1, the experts split by width over all 8 ranks"
    )


def test_off_nvidia_the_vllm_line_asks_no_deepep_where_sglang_prices_it(cli):
    """Priced on SGLang for 8 x MI355X with DeepEP, the companion vLLM line asked --all2all-backend
    deepep_low_latency, which the same request priced on vLLM refuses there (ROCm: MoRI; trial 359 #3). It keeps
    vLLM's default dispatch and says so; the control on H200s keeps the flag."""
    args = ("plan", V3, "--dp", "8", "--engine", "sglang", "--moe-a2a-backend", "deepep", "--concurrency", "32",
            "--closed-form")  # fmt: skip
    amd = cli.json(*args, "--target", "8xmi355x")
    assert "--all2all-backend" not in shlex.split(amd["launch"]["vllm"])
    assert "--moe-a2a-backend" in shlex.split(amd["launch"]["sglang"])
    assert "vLLM runs DeepEP on NVIDIA GPUs alone" in amd["launch_note"]
    nvidia = cli.json(*args, "--target", "8xh200")
    vllm = shlex.split(nvidia["launch"]["vllm"])
    assert vllm[vllm.index("--all2all-backend") + 1] == "deepep_low_latency"
    # the budget written is the one priced, not vLLM's own 256 under batched DP MoE (trial 359 #5), and it says so
    assert "--max-num-batched-tokens" in vllm and "vLLM's own default is 256 tokens" in nvidia["launch_note"]


@pytest.mark.parametrize("target", ["8xmi300x", "8xh200"])
def test_the_companion_vllm_line_asks_no_e5m2_mla_cache_vllm_refuses(cli, target):
    """Priced on SGLang with an e5m2 cache, DeepSeek-V3's vLLM line asked --kv-cache-dtype fp8_e5m2, which the same
    plan priced on vLLM refuses (its MLA backends cache fp8 as e4m3: trial 365 #4); the line runs its default cache
    and says why. The sglang line keeps the cache priced."""
    found = cli.json("plan", V3, "--target", target, "--tp", "8", "--concurrency", "8", "--closed-form",
                     "--engine", "sglang", "--kv-dtype", "fp8_e5m2")  # fmt: skip
    assert "--kv-cache-dtype" not in shlex.split(found["launch"]["vllm"])
    assert "fp8_e5m2" in shlex.split(found["launch"]["sglang"])
    assert "the vllm line runs its default KV cache: vLLM" in found["launch_note"]
    assert cli.run("plan", V3, "--target", target, "--tp", "8", "--concurrency", "8", "--closed-form",
                   "--kv-dtype", "fp8_e5m2").exit_code == 2  # fmt: skip


def test_the_companion_sglang_line_is_left_out_where_its_reserve_exceeds_the_gpu_or_vllm_options_are_set(cli):
    """Review 370 #1-#2: the check of the sglang line beside a vLLM plan kept it where SGLang's own pricing refused
    outright (a 65,536-token chunk's 96 GiB reserve on an 80 GB H100: "leaves nothing") or where a vLLM-only option
    (--kv-cache-gib) made the SGLang pricing refuse for another reason; both now leave it out with SGLang's words."""
    common = ("plan", "--dp", "8", "--isl", "1024", "--osl", "1024", "--concurrency", "1024", "--closed-form")
    h100 = cli.json(*common[:1], "deepseek-v2-lite", "--target", "8xh100", *common[1:])
    assert "sglang" not in h100["launch"]
    assert "SGLang's reserve for a 65536-token chunked prefill leaves nothing of 79.19 GiB" in h100["launch_note"]
    pool = cli.json(*common[:1], V3, "--target", "8xh200", *common[1:], "--kv-cache-gib", "40")
    assert "sglang" not in pool["launch"] and "--chunked-prefill-size 65536" in pool["launch_note"]
