"""MoE experts spread over the ranks that share them: the bytes per device (exact, against the checkpoint's own
count), vLLM's data-parallel ranks sharing the experts and TensorRT-LLM's replicas not, the cost model's dispatch
over the shared ranks, and the search trying expert parallelism with the launch flags each engine needs."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.work import decode_shape, forward_ops
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import expert_layout, plan_memory
from mha_cli.core.params import count_params, params_per_rank
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import resolve_target
from mha_cli.core.tensor_parallel import ExpertLayout, tp_shard_problem

MIXTRAL_TOTAL = 46_702_792_704
"""Mixtral-8x7B's parameters as its safetensors index sums them (46.7B)."""
MIXTRAL_EXPERTS = 32 * 8 * 3 * 4096 * 14336
"""32 layers x 8 experts x (gate, up, down) of 4096 x 14336."""


def test_whole_experts_leave_each_rank_its_share_exactly():
    mixtral = get_preset("mixtral-8x7b")
    assert count_params(mixtral).total == MIXTRAL_TOTAL
    one_expert_each = params_per_rank(mixtral, 1, experts=ExpertLayout(8, whole=True))
    assert one_expert_each == MIXTRAL_TOTAL - MIXTRAL_EXPERTS * 7 // 8  # everything but 7 of the 8 experts
    # sharding every expert's width 8 ways holds the same bytes as 1 whole expert of 8
    assert params_per_rank(mixtral, 1, experts=ExpertLayout(8)) == one_expert_each
    # 256 experts over 8 ranks: 32 whole on each, the same as every expert at 1/8 width (tp 8's own layout)
    v3 = get_preset("deepseek-v3")
    assert params_per_rank(v3, 8, experts=ExpertLayout(8, whole=True)) == params_per_rank(v3, 8)


def test_layouts_that_cannot_exist_are_refused_with_why():
    mixtral = get_preset("mixtral-8x7b")
    assert "at least as many experts" in tp_shard_problem(mixtral, 2, ExpertLayout(16, whole=True))
    assert "multiple of tp" in tp_shard_problem(mixtral, 4, ExpertLayout(6))
    assert tp_shard_problem(mixtral, 2, ExpertLayout(8, whole=True)) is None


def test_vllm_replicas_share_the_experts_and_trtllm_replicas_copy_them():
    mixtral = get_preset("mixtral-8x7b")
    assert expert_layout(mixtral, 2, 4, DeploymentSpec()) == ExpertLayout(8)
    assert expert_layout(mixtral, 2, 4, DeploymentSpec(expert_parallel=True)) == ExpertLayout(8, whole=True)
    assert expert_layout(mixtral, 2, 4, DeploymentSpec(engine="trtllm")) == ExpertLayout(2)
    assert expert_layout(get_preset("llama-3-8b"), 2, 4, DeploymentSpec()) is None
    target = resolve_target("8xh100")
    kv = kv_footprint(mixtral, seq_len=4096, batch=8, tp=2)
    shared = plan_memory(target, model=mixtral, kv=kv, weight_dtype="bf16")
    copied = plan_memory(target, model=mixtral, kv=kv, weight_dtype="bf16", deployment=DeploymentSpec(engine="trtllm"))
    assert shared.expert_ranks == 8 and copied.expert_ranks == 2
    assert copied.weight_bytes_per_device - shared.weight_bytes_per_device == 2 * MIXTRAL_EXPERTS * (1 / 2 - 1 / 8)
    assert shared.engine.admitted_per_replica > copied.engine.admitted_per_replica  # the freed bytes hold cache
    assert "tensor-sharded over 8 ranks" in shared.experts_per_device


def test_shared_experts_gather_every_groups_tokens_and_read_only_their_own():
    mixtral = get_preset("mixtral-8x7b")
    shape = decode_shape(16, 2048)
    own = forward_ops(mixtral, shape, tp=2)
    assert forward_ops(mixtral, shape, tp=2, experts=ExpertLayout(2)) == own  # the default layout, spelled out
    shared = forward_ops(mixtral, shape, tp=2, experts=ExpertLayout(8, whole=True))
    dispatch = [op for op in shared if op.name == "experts' gather and reduce-scatter"]
    assert len(dispatch) == 1 and dispatch[0].count == 2 * 32 and dispatch[0].ranks == 8
    assert dispatch[0].bytes == 4 * 16 * 4096 * 2  # the 4 groups' tokens, d_model wide, bf16
    reduce = next(op for op in shared if op.kind == "all_reduce")
    assert reduce.count == 32  # only attention's all-reduce stays in the tp group
    expert = next(op for op in shared if op.name.startswith("expert 14336x"))
    # 64 tokens x top-2 over the 8 experts they touch, each whole on its own rank: 1 expert, 16 rows
    assert expert.tokens == 16 and expert.count == 32 * 2
    assert not any(op.ranks for op in own)
    assert [op.name for op in shared].count("logits gather") == 1  # tp 2: the vocabulary's shards gathered once
    at_tp1 = forward_ops(mixtral, shape, tp=1, experts=ExpertLayout(8, whole=True))
    assert not any(op.name == "logits gather" for op in at_tp1)  # one rank holds the whole head
    dense = forward_ops(get_preset("llama-3-8b"), shape, tp=2)
    assert [op.name for op in dense].count("logits gather") == 1


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_search_tries_expert_parallelism_and_launches_it(cli, engine):
    result = cli.json(  # 1,024 tokens a step: the sglang line beside vLLM's asks a chunk SGLang's reserve starts
        "plan", "mixtral-8x7b", "--target", "8xh100", "--isl", "1024", "--osl", "256", "--concurrency", "256",
        "--engine", engine, "--max-num-batched-tokens", "1024",
    )  # fmt: skip
    layouts = result["layouts"]
    assert any("with expert parallelism" in line for line in layouts)
    ep = [c for c in result["candidates"] if c["deployment"]["expert_parallel"]]
    assert ep and all(c["deployment"]["expert_ranks"] == c["deployment"]["tp"] * c["deployment"]["replicas"]
                      for c in ep)  # fmt: skip
    pick = result["candidates"][result["chosen"]]["deployment"]
    vllm, sglang = result["launch"]["vllm"], result["launch"]["sglang"]
    assert ("--enable-expert-parallel" in vllm) == pick["expert_parallel"]
    if pick["replicas"] > 1:  # SGLang counts every rank sharing the experts in --tp-size
        assert f"--tp-size {pick['tp'] * pick['replicas']}" in sglang and f"--attn-dp-size {pick['replicas']}" in sglang
    if pick["expert_parallel"]:
        assert f"--ep-size {pick['expert_ranks']}" in sglang


def test_one_expert_parallel_deployment_and_its_refusals(cli):
    result = cli.json("plan", "mixtral-8x7b", "--target", "8xh100", "--tp", "2", "--expert-parallel")
    assert result["deployment"]["expert_parallel"] and result["deployment"]["expert_ranks"] == 8
    assert result["memory"]["experts_per_device"].startswith("1 of 8 experts whole")
    dense = cli.run("plan", "llama-3-8b", "--target", "2xh100", "--tp", "1", "--expert-parallel")
    assert dense.exit_code == 2 and "has none" in dense.output and len(dense.output.strip().splitlines()) == 1
    with pytest.raises(BadInputError, match="at least as many experts"):
        from mha_cli.core.cost.plan import plan_serving
        from mha_cli.core.cost.priors import datasheet_profile, prior_profile

        target = resolve_target("16xh100")
        plan_serving(
            get_preset("mixtral-8x7b"), target, DeploymentSpec(expert_parallel=True), prior_profile(target.target),
            datasheet_profile(target.target), isl=128, osl=16, concurrency=1, tp=2,
        )  # fmt: skip


def test_replicas_that_cannot_share_the_experts_are_priced_as_copies_and_say_so(cli):
    """6 x H100 at tp 2: the 6 ranks do not divide Mixtral's 14,336-wide experts, so vLLM's --data-parallel-size 3
    would not start; the plan is 3 separate servers, each with its own copy (this was exit 2)."""
    kv = cli.json("kv", "mixtral-8x7b", "--target", "6xh100", "--tp", "2")
    assert kv["memory"]["expert_ranks"] == 2
    assert any("cannot share the experts" in note for note in kv["memory"]["engine"]["notes"])
    plan = cli.json("plan", "mixtral-8x7b", "--target", "6xh100", "--tp", "2")
    assert plan["deployment"]["expert_ranks"] == 2 and any("own copy" in note for note in plan["notes"])
    search = cli.json("plan", "mixtral-8x7b", "--target", "6xh100", "--concurrency", "64")
    pick = search["candidates"][search["chosen"]]["deployment"]
    if pick["expert_ranks"] == pick["tp"] and pick["replicas"] > 1:  # copies: one server per replica
        assert "--data-parallel-size 1" in search["launch"]["vllm"]
    assert cli.run("recommend", "--params", "30B", "--active-params", "3B", "--target", "6xh100").exit_code == 0
    refused = cli.run("plan", "mixtral-8x7b", "--target", "16xh100", "--tp", "2", "--expert-parallel")
    assert refused.exit_code == 2 and "at least as many experts" in refused.stderr


def test_the_width_refusal_names_the_ranks_sharing_the_experts():
    problem = tp_shard_problem(get_preset("mixtral-8x7b"), 2, ExpertLayout(6))
    assert "6 ranks sharing the experts (tp x replicas)" in problem and "--expert-parallel" in problem
