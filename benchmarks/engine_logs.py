"""Engine start-up logs priced by the generation their version names: the per-token rule and the whole plan.

    python benchmarks/engine_logs.py > outputs/serving/engine_logs.md

Two sets, neither used to read off or fit any constant: ``tests/fixtures/engine_logs.yaml`` (vLLM >= 0.21, SGLang,
TensorRT-LLM, held out) and the logs of ``tests/fixtures/vllm_logs.yaml`` that are not vLLM 0.19 (the V0 engine,
vLLM 0.7-0.11), each priced by its generation (``core.engine.generations``). For each log:

- per-token rule: the tokens the generation's pool arithmetic gives for the log's own KV memory (vLLM's blocks of 16
  within the log's 0.01 GiB rounding; SGLang's K + V bytes of tokens + 1; TensorRT-LLM's bytes / per-token bytes in
  whole blocks), against the log's tokens: exact or not;
- whole plan: the tokens ``core.engine.plan`` gives from the device, weights, activation peak and the generation's
  budget, against the log's tokens (error, and whether within 5%).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from mha_cli.core.engine.generations import BY_ID
from mha_cli.core.engine.pages import paged_pool
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import rank_weight_bytes

GIB = 2**30
ROOT = Path(__file__).parent.parent
WITHIN = 0.05
"""A whole plan counts as right within 5% of the log's tokens."""

VLLM_LOG_GENERATIONS = {18: "vllm-v0", 19: "vllm-v0", 20: "vllm-v0", 101: "vllm-v1", 102: "vllm-v1", 103: "vllm-v1",
                        104: "vllm-v1", 105: "vllm-v1", 106: "vllm-v1", 107: "vllm-v0", 108: "vllm-v0",
                        109: "vllm-v0", 110: "vllm-v1"}  # fmt: skip
"""vllm_logs.yaml's logs that are not vLLM 0.19, by the engine their ``vllm_version`` field names (110 ran V1 on
0.7 with VLLM_USE_V1=1: V1's rules, though 0.7 is V0's release by default)."""


def _vllm_log_target(gpu: str) -> str:
    """The mha target of a vllm_logs.yaml ``gpu`` text."""
    for words, target in (("A100 40GB", "a100-40gb"), ("A100", "a100-80gb"), ("L40S", "l40s"), ("3090", "rtx-3090")):
        if words in gpu:
            return target
    return "h100-sxm"


def _from_vllm_logs() -> list[dict[str, Any]]:
    """vllm_logs.yaml's non-0.19 logs in engine_logs.yaml's fields."""
    logs = yaml.safe_load((ROOT / "tests" / "fixtures" / "vllm_logs.yaml").read_text())
    rows = []
    for entry in logs:
        if entry["id"] not in VLLM_LOG_GENERATIONS or not entry["config"]:
            continue
        quantised = str(entry["quantization"])
        weights = next((fmt for word, fmt in (("fp8", "fp8"), ("gptq", "gptq-int4"), ("compressed-tensors W8A8", "int8"))
                        if quantised.startswith(word)), None)  # fmt: skip
        tokens = entry["kv_cache_tokens"] or (entry["gpu_blocks"] or 0) * 16
        rows.append(
            {
                "id": entry["id"], "url": entry["url"], "engine": "vllm", "generation": VLLM_LOG_GENERATIONS[entry["id"]],
                "target": _vllm_log_target(str(entry["gpu"])), "total_gpu_memory_gib": entry["total_gpu_memory_gib"],
                "model": entry["model"], "config": entry["config"], "weight_dtype": weights,
                "kv_dtype": "fp8" if entry["kv_cache_dtype"] == "fp8" else "bf16",
                "tensor_parallel_size": entry["tensor_parallel_size"], "max_model_len": entry["max_model_len"],
                "max_num_batched_tokens": entry["max_num_batched_tokens"], "max_num_seqs": entry["max_num_seqs"],
                "utilisation": entry["gpu_memory_utilization"], "available_kv_gib": entry["available_kv_gib"],
                "kv_tokens": tokens or None, "kv_bytes": None, "pipeline": entry["pipeline_parallel_size"],
            }
        )  # fmt: skip
    return rows


def load_logs() -> list[dict[str, Any]]:
    """Every log priced here: engine_logs.yaml's, then vllm_logs.yaml's non-0.19 ones."""
    held_out = yaml.safe_load((ROOT / "tests" / "fixtures" / "engine_logs.yaml").read_text())
    return held_out + _from_vllm_logs()


def _model_and_footprint(log: dict[str, Any]):
    source = load_source(str(ROOT / log["config"]))
    kv = kv_footprint(source.model, seq_len=log["max_model_len"], kv_dtype=log["kv_dtype"],
                      tp=log["tensor_parallel_size"])  # fmt: skip
    return source, kv


def per_token_tokens(log: dict[str, Any]) -> list[int] | None:
    """The tokens the generation's pool arithmetic gives for the log's own KV memory (a range where the log rounds
    it); None when the log prints no memory figure."""
    source, kv = _model_and_footprint(log)
    per_token, engine = kv.bytes_per_token_per_rank, log["engine"]
    if engine == "sglang" and log.get("k_size_gib"):  # K (as V) of tokens + 1 (its padding slot), to 0.01 GiB
        return [round((log["k_size_gib"] + sign * 0.005) * GIB) * 2 // per_token - 1 for sign in (-1, 1)]
    block = log.get("block_size") or BY_ID[log["generation"]].block_size
    if log.get("kv_bytes"):
        return [log["kv_bytes"] // per_token // block * block]
    if not log["available_kv_gib"]:
        return None
    bounds = (round((log["available_kv_gib"] - 0.005) * GIB), round((log["available_kv_gib"] + 0.005) * GIB))
    if engine == "vllm" and BY_ID[log["generation"]].hybrid_allocator:
        per_layer = per_token // kv.n_token_layers
        return [
            paged_pool(
                source.model, available_bytes=available, bytes_per_token_per_layer=per_layer, block_size=block,
                max_model_len=log["max_model_len"], max_num_batched_tokens=log["max_num_batched_tokens"] or 8192,
            ).kv_tokens
            for available in bounds
        ]  # fmt: skip
    return [available // per_token // block * block for available in bounds]


def memory_figure(log: dict[str, Any]) -> str:
    """The log's KV-memory figure the per-token rule starts from."""
    if log.get("kv_bytes"):
        return f"{log['kv_bytes']:,} B"
    if log.get("k_size_gib"):
        return f"K size {log['k_size_gib']} GiB"
    return f"{log['available_kv_gib']} GiB"


def whole_plan(log: dict[str, Any], generation: str | None = None):
    """The plan of ``generation`` (the log's own by default) for the log's deployment, from first principles."""
    source, kv = _model_and_footprint(log)
    tp = log["tensor_parallel_size"]
    target = resolve_target(log["target"]).target
    if log.get("total_gpu_memory_gib") and log["total_gpu_memory_gib"] != target.torch_memory_gib:
        target = target.model_copy(update={"torch_memory_gib": log["total_gpu_memory_gib"]})
    weights = log["weight_dtype"] or (source.deployment.weight_dtype if source.deployment else "bf16")
    deployment = DeploymentSpec(
        seq_len=log["max_model_len"], tp=tp, engine=log["engine"],
        engine_generation=generation or log["generation"],
        gpu_memory_utilization=log["utilisation"], max_num_batched_tokens=log["max_num_batched_tokens"],
        max_num_seqs=log["max_num_seqs"], block_size=log.get("block_size"), kv_dtype=log["kv_dtype"],
    )  # fmt: skip
    return plan_engine(
        source.model, kv, target, resolve_settings(deployment, target, tp),
        weights_bytes_per_rank=rank_weight_bytes(source.model, tp, weights), sequences_per_replica=1,
    )  # fmt: skip


def main() -> None:
    print("# Engine start-up logs, each priced by its generation\n")
    print("Written by `python benchmarks/engine_logs.py` (see its docstring). Tokens: the log's; per-token rule: the")
    print("tokens from the log's own KV memory; plan: from first principles. Nothing was fitted on these logs.\n")
    print("The last column is the control: the same log priced by the engine's other generations' rules.\n")
    print(
        "| id | generation | model | GPU x tp | log tokens | per-token rule | plan tokens | plan error | within 5% |"
        " other generations |"
    )
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | --- | --- |")
    exact = checked = close = planned = 0
    by_generation: dict[str, list[float]] = {}
    for log in load_logs():
        reported = log["kv_tokens"]
        if not reported:
            continue
        rule = per_token_tokens(log)
        verdict = "no memory figure"
        if rule is not None:
            checked += 1
            hit = min(rule) <= reported <= max(rule)
            exact += hit
            shown = f"{rule[0]:,}" if len(set(rule)) == 1 else f"{min(rule):,}-{max(rule):,}"
            verdict = f"{'exact' if hit else 'miss'} ({shown} from the log's {memory_figure(log)})"
        if log.get("pipeline", 1) != 1:
            plan_cells = "| pipeline stages: not priced | | | |"
        else:
            plan = whole_plan(log)
            error = plan.kv_tokens / reported - 1
            planned += 1
            close += abs(error) <= WITHIN
            by_generation.setdefault(log["generation"], []).append(error)
            others = ", ".join(
                f"{g.id} {whole_plan(log, g.id).kv_tokens / reported - 1:+.1%}"
                for g in BY_ID.values() if g.engine == log["engine"] and g.id != log["generation"]
            )  # fmt: skip
            plan_cells = f"| {plan.kv_tokens:,} | {error:+.1%} | {'yes' if abs(error) <= WITHIN else 'no'} | {others} |"
        model = re.sub(r"^.*/", "", log["model"].split(" ")[0])[:30]
        print(
            f"| [{log['id']}]({log['url']}) | {log['generation']} | {model} | {log['target']} x"
            f" {log['tensor_parallel_size']} | {reported:,} | {verdict} {plan_cells}"
        )
    print(f"\nPer-token rule exact on {exact} of {checked} logs that print their KV memory.")
    print(f"Whole plan within 5% on {close} of {planned} logs priced.\n")
    print("| generation | logs | median error | worst |")
    print("| --- | ---: | ---: | ---: |")
    for generation, errors in sorted(by_generation.items()):
        ordered = sorted(errors)
        median = ordered[len(ordered) // 2] if len(ordered) % 2 else sum(ordered[len(ordered) // 2 - 1 :][:2]) / 2
        worst = max(errors, key=abs)
        print(f"| {generation} | {len(errors)} | {median:+.1%} | {worst:+.1%} |")


if __name__ == "__main__":
    main()
