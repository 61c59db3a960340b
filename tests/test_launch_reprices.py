"""A search's launch line reproduces the pool it prints: the priced engine's line, its settings read back off the
line and priced again (``resolve_settings`` then ``plan_engine``, nothing launched), holds the same KV tokens.

On an H100 vLLM's profiling run samples max_num_seqs rows (1,024 by default), so a line capping the requests at the
340 a llama-3.1-8b replica runs would start a pool 10,992 tokens larger than the one priced (0.33's second dummy
sampler pass, 14 B a logit over 1,024 rows, is the profiling peak; over 340 rows the forward is)."""

from __future__ import annotations

import shlex

import pytest

from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import resolve_target
from tests.conftest import REPO

SEARCH = ("plan", "llama-3.1-8b", "--target", "h100", "--closed-form")
FLAGS = {  # (tensor parallel, context, requests, step budget, memory fraction) in each engine's words
    "vllm": ("--tensor-parallel-size", "--max-model-len", "--max-num-seqs", "--max-num-batched-tokens",
             "--gpu-memory-utilization"),
    "sglang": ("--tp-size", "--context-length", "--max-running-requests", "--chunked-prefill-size",
               "--mem-fraction-static"),
    "trtllm": ("--tp_size", "--max_seq_len", "--max_batch_size", "--max_num_tokens",
               "--kv_cache_free_gpu_memory_fraction"),
}  # fmt: skip


def _value(words: list[str], flag: str) -> str | None:
    return words[words.index(flag) + 1] if flag in words else None


def _repriced(engine: str, line: str, weights_bytes_per_rank: int):
    """The engine plan of the settings ``line`` sets (the engine's defaults for those it leaves out)."""
    words = shlex.split(line)
    tp, context, requests, step, fraction = (_value(words, flag) for flag in FLAGS[engine])
    deployment = DeploymentSpec(
        engine=engine, max_num_seqs=int(requests), max_num_batched_tokens=None if step is None else int(step),
        gpu_memory_utilization=None if fraction is None else float(fraction),
    )  # fmt: skip
    target = resolve_target("h100").target
    settings = resolve_settings(deployment, target, int(tp))
    kv = kv_footprint(get_preset("llama-3.1-8b"), seq_len=int(context), batch=1, tp=int(tp))
    return plan_engine(
        get_preset("llama-3.1-8b"), kv, target, settings, weights_bytes_per_rank=weights_bytes_per_rank,
        sequences_per_replica=1,
    )  # fmt: skip


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_the_priced_engines_line_starts_the_pool_priced(cli, engine):
    found = cli.json(*SEARCH, "--engine", engine)
    priced = found["candidates"][found["chosen"]]["memory"]["engine"]
    again = _repriced(engine, found["launch"][engine], priced["weights_bytes_per_rank"])
    assert again.max_num_seqs == priced["max_num_seqs"]
    assert again.kv_tokens == priced["kv_tokens"] and again.kv_blocks == priced["kv_blocks"]


def test_the_vllm_line_carries_the_max_num_seqs_priced_not_the_running_count(cli):
    """vLLM's H100 default, 1,024 (``_set_default_args``), was priced; 256 requests of 1,280 tokens run at once (340
    on the default constants, which priced a plan without --engine before 2026-12-08)."""
    found = cli.json(*SEARCH)
    pick = found["candidates"][found["chosen"]]
    assert pick["memory"]["engine"]["max_num_seqs"] == 1024 and pick["running_per_replica"] == 256
    assert _value(shlex.split(found["launch"]["vllm"]), "--max-num-seqs") == "1024"
    # the unpriced SGLang line takes the same cap (the one the plan's scheduler ran at), not the running count
    assert _value(shlex.split(found["launch"]["sglang"]), "--max-running-requests") == "1024"
    # the control: the running count on the vLLM line prices another pool (a smaller sampler peak, more tokens)
    running = found["launch"]["vllm"].replace("--max-num-seqs 1024", "--max-num-seqs 256")
    other = _repriced("vllm", running, pick["memory"]["engine"]["weights_bytes_per_rank"])
    assert other.kv_tokens - pick["memory"]["engine"]["kv_tokens"] == 11_680  # 10,992 at 340


QWEN3_32B_PP = ("plan", str(REPO / "tests" / "fixtures" / "hf_configs" / "qwen3-32b.json"), "--target", "2xh100",
                "--engine", "vllm@0.11.0", "--closed-form")  # fmt: skip
"""A pick (tp 2 at 223 users since the 2026-12-03 gemmramp refit; tp 1 x pp 2 at 128 users when written, at 223 from
vllmeff's refit) whose vLLM pool is priced at the H100 default of 1,024 sequences."""


def _caps(found: dict) -> dict[str, str | None]:
    """Each engine line's cap on the requests it runs."""
    flags = {engine: names[2] for engine, names in FLAGS.items()}
    return {engine: _value(shlex.split(line), flags[engine]) for engine, line in found["launch"].items()}


def test_every_line_caps_the_requests_at_the_max_num_seqs_priced(cli):
    """One pick, one cap: vLLM's line starts the pool priced at 1,024 sequences, and SGLang's line no longer writes
    the 223 users the point runs (a cap the plan never priced); asking for 128 prices 128 and every line writes it."""
    found = cli.json(*QWEN3_32B_PP)
    pick = found["candidates"][found["chosen"]]
    priced = pick["memory"]["engine"]["max_num_seqs"]
    # 128 users before vllm-v1's refit (vllmeff), 223 from it to the first 2026-12-03 refit, 128 from it to the
    # 2026-12-03 gemmramp refit
    assert (priced, pick["concurrency"]) == (1024, 223)
    assert _caps(found) == {"vllm": "1024", "sglang": "1024"}
    asked = cli.json(*QWEN3_32B_PP, "--max-num-seqs", "128")
    assert asked["candidates"][asked["chosen"]]["memory"]["engine"]["max_num_seqs"] == 128
    assert _caps(asked) == {"vllm": "128", "sglang": "128"}


def test_vllms_line_keeps_its_cap_within_its_step_budget(cli):
    """TensorRT-LLM priced at its 2,048 batch: vLLM refuses a max_num_seqs above max_num_batched_tokens
    (SchedulerConfig._verify_args), so its line takes at most the step budget."""
    found = cli.json(*SEARCH, "--engine", "trtllm", "--max-num-batched-tokens", "1024")
    priced = found["candidates"][found["chosen"]]["memory"]["engine"]
    assert priced["max_num_seqs"] > 1024
    caps = _caps(found)
    assert caps["vllm"] == "1024" and caps["sglang"] == caps["trtllm"] == str(priced["max_num_seqs"])
