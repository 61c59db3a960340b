"""DP attention with pipeline stages: offered and launched only where the engine's release runs it
(``core.dp_attention.STAGES_FIRST``: SGLang from 0.5.2, sgl-project/sglang#9805 fixed by #10100; vLLM in every
release with --data-parallel-size)."""

from __future__ import annotations

import shlex

import pytest

from mha_cli.core.dp_attention import dp_attention_stages_problem
from mha_cli.core.errors import EXIT_BAD_INPUT

GPT_OSS = "tests/fixtures/hf_configs/gpt-oss-120b.json"
LOAD = ["--target", "8xh100", "--isl", "8192", "--concurrency", "256", "--closed-form"]
"""8 x H100 at 256 users of 8K prompts: on SGLang 0.5.1 the search used to pick 4 DP-attention ranks x pp 2."""


def _value(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def _dp_over_stages(deployment: dict) -> bool:
    """Whether a candidate is DP attention (replicas sharing the experts) over pipeline stages."""
    shared = deployment["dp_attention"] or (deployment["expert_ranks"] or 0) > deployment["tp"]
    return deployment["pp"] > 1 and deployment["replicas"] > 1 and shared


@pytest.mark.parametrize(
    ("engine", "generation", "release", "pp", "refused"),
    [
        ("sglang", None, "0.5.1", 2, True),
        ("sglang", "sglang-0.4", None, 2, True),  # 0.4's latest
        ("sglang", None, "0.5.2", 2, False),
        ("sglang", None, None, 4, False),  # the latest
        ("sglang", None, "0.5.1", 1, False),  # one stage: plain DP attention
        ("vllm", None, "0.16.0", 2, False),
        ("vllm", None, "0.19.1", 8, False),
    ],
)
def test_the_release_rule(engine, generation, release, pp, refused):
    assert (dp_attention_stages_problem(engine, generation, release, pp) is not None) == refused


def test_the_search_on_sglang_0_5_1_picks_a_layout_it_starts(cli):
    found = cli.json("plan", GPT_OSS, *LOAD, "--engine", "sglang@0.5.1")
    pick = found["candidates"][found["chosen"]]["deployment"]
    # before: tp 1 x pp 2 x 4 DP-attention ranks, experts whole (733 tokens/s per GPU), a line that crashes; then tp 2
    # x pp 4 with expert parallelism (690); since separate servers are searched (trial 275 #1), 4 of tp 2 (782)
    assert (pick["tp"], pick["pp"], pick["replicas"], pick["separate_servers"]) == (2, 1, 4, True)
    assert not any(_dp_over_stages(c["deployment"]) for c in found["candidates"])
    stages = [line for line in found["layouts"] if "DP-attention ranks of tp 1 x pp 2" in line]
    assert len(stages) == 2 and all("left out (SGLang 0.5.1 crashes DP attention" in line for line in stages)
    sglang = shlex.split(found["launch"]["sglang"])  # --dp-size without DP attention: SGLang's independent copies
    assert _value(sglang, "--dp-size") == "4" and "--enable-dp-attention" not in sglang


def test_the_search_on_sglang_0_5_2_still_offers_it(cli):
    """The control: the release with the fix picks DP attention over stages, launched with its 0.5.2 words."""
    found = cli.json("plan", GPT_OSS, *LOAD, "--engine", "sglang@0.5.2")
    pick = found["candidates"][found["chosen"]]["deployment"]
    assert (pick["tp"], pick["pp"], pick["replicas"]) == (1, 2, 4) and _dp_over_stages(pick)
    sglang = shlex.split(found["launch"]["sglang"])
    assert _value(sglang, "--tp-size") == "4" and _value(sglang, "--pp-size") == "2"
    assert _value(sglang, "--dp-size") == "4" and "--enable-dp-attention" in sglang  # --attn-dp-size from 0.5.22


def test_dp_with_pp_typed_is_refused_in_one_line_on_sglang_before_0_5_2(cli):
    result = cli.run("plan", GPT_OSS, *LOAD, "--engine", "sglang@0.5.1", "--dp", "4", "--pp", "2")
    assert result.exit_code == EXIT_BAD_INPUT
    assert len(result.output.strip().splitlines()) == 1
    assert "SGLang 0.5.1 crashes DP attention with pipeline stages" in result.output
    assert "sgl-project/sglang#9805" in result.output and "sglang@0.5.2" in result.output


def test_the_search_on_vllm_launches_dp_attention_over_stages_with_each_engines_flags(cli):
    """MiniMax-M2 at 256 users of 8K prompts on vLLM (which runs it): 4 DP-attention ranks x pp 2, both lines."""
    found = cli.json("plan", "tests/fixtures/hf_configs/minimax-m2.json", *LOAD)
    pick = found["candidates"][found["chosen"]]["deployment"]
    assert (pick["tp"], pick["pp"], pick["replicas"]) == (1, 2, 4) and _dp_over_stages(pick)
    vllm, sglang = shlex.split(found["launch"]["vllm"]), shlex.split(found["launch"]["sglang"])
    # vLLM: 4 engine cores of tp 1 x pp 2, the experts over each stage's 4 ranks (parallel_state.py: dp x tp)
    assert _value(vllm, "--tensor-parallel-size") == "1" and _value(vllm, "--pipeline-parallel-size") == "2"
    assert _value(vllm, "--data-parallel-size") == "4" and "--enable-expert-parallel" in vllm
    # SGLang (latest): --tp-size counts a stage's GPUs, 4 attention ranks of tp 1 in each of 2 stages
    assert _value(sglang, "--tp-size") == "4" and _value(sglang, "--pp-size") == "2"
    assert _value(sglang, "--attn-dp-size") == "4" and _value(sglang, "--ep-size") == "4"
