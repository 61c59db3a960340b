"""Predicted against reported, for every published vLLM start-up log in ``tests/fixtures/vllm_logs.yaml``.

    python benchmarks/vllm_logs.py

For each log: the KV tokens from the log's own available memory (the block arithmetic alone) and from first
principles (device memory, weights, activation peak, non-torch memory: ``core.engine``, by the generation of the
log's engine: V0 or V1), against the log's. The logs that are not vLLM 0.19 are priced from first principles by
``benchmarks/engine_logs.py``'s route (by their release and the sampler line they print), so the two tables give one
figure per log; they are marked ``*``. A log of pipeline stages (``pp2`` after its tp) is priced stage by stage, each
worker holding its own layers and the embedding or head (``core.pipeline``), at the fewest tokens any stage holds.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engine_logs import VLLM_LOG_GENERATIONS, _from_vllm_logs, whole_plan

from mha_cli.core.engine.pages import paged_pool
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.pipeline import stage_layout, stage_model, stage_sides
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import BOTH_SIDES, rank_weight_bytes

GIB = 2**30
ROOT = Path(__file__).parent.parent


def main() -> None:
    logs = load_yaml_file(ROOT / "tests" / "fixtures" / "vllm_logs.yaml")
    by_release = {row["id"]: row for row in _from_vllm_logs()}
    print(f"{'id':>3} {'model':34} {'tp':>2} {'reported':>10} {'from log':>10} {'first pr.':>10} {'error':>7}  weights")
    for entry in logs:
        reported = entry["kv_cache_tokens"] or (entry["gpu_blocks"] or 0) * 16
        if not entry["config"] or not reported or not entry["available_kv_gib"]:
            print(f"{entry['id']:>3} {entry['model'][:34]:34} (no config.json or token figure: not priced)")
            continue
        source = load_source(str(ROOT / entry["config"]))
        whole, tp, pp = source.model, entry["tensor_parallel_size"], entry["pipeline_parallel_size"] or 1
        kv_dtype = "fp8" if entry["kv_cache_dtype"] == "fp8" else "bf16"
        step = entry["max_num_batched_tokens"] or 8192
        stages = [stage_layout(whole, pp, s) for s in range(pp)] if pp > 1 else [None]
        priced = []  # each stage's plan: vLLM gives every worker the fewest blocks any stage reports
        for stage in stages:
            model = whole if stage is None else stage_model(whole, stage)
            kv = kv_footprint(model, seq_len=entry["max_model_len"], kv_dtype=kv_dtype, tp=tp)
            priced.append((model, kv, stage))
        model, kv, stage = priced[-1]  # a log prints one worker's memory, its tokens the fewest of any worker's
        from_log = paged_pool(
            model, available_bytes=round(entry["available_kv_gib"] * GIB),
            bytes_per_token_per_layer=kv.bytes_per_token_per_rank // kv.n_token_layers, block_size=16,
            max_model_len=entry["max_model_len"], max_num_batched_tokens=step,
        ).kv_tokens  # fmt: skip
        weights = source.deployment.weight_dtype if source.deployment else "bf16"
        quantised = str(entry["quantization"])
        if quantised.startswith(("fp8", "gptq")):  # an fp8 fixture without its quantization_config, fp8 on load; GPTQ
            weights = "fp8" if quantised.startswith("fp8") else "gptq-int4"
        gpu = str(entry["gpu"])
        spec = "a100-40gb" if "A100 40GB" in gpu else "a100" if "A100" in gpu else "l40s" if "L40S" in gpu else "h100"
        target = resolve_target(spec).target
        if entry["total_gpu_memory_gib"] and entry["total_gpu_memory_gib"] != target.torch_memory_gib:
            target = target.model_copy(update={"torch_memory_gib": entry["total_gpu_memory_gib"]})
        generation = "vllm-v0" if "V0" in str(entry["vllm_version"]) else "vllm-v1"  # the log's engine's rules
        deployment = DeploymentSpec(  # the engine's defaults for this GPU where the log does not state them
            seq_len=entry["max_model_len"], tp=tp, gpu_memory_utilization=entry["gpu_memory_utilization"],
            max_num_batched_tokens=entry["max_num_batched_tokens"], max_num_seqs=entry["max_num_seqs"],
            engine_generation=generation,
        )  # fmt: skip
        if entry["id"] in VLLM_LOG_GENERATIONS:  # engine_logs.py's route: by release and printed sampler
            plan = whole_plan(by_release[entry["id"]])
        else:  # under pipeline parallelism, each stage's layers and sides; the fewest tokens
            plan = min(
                (
                    plan_engine(
                        layers, stage_kv, target, resolve_settings(deployment, target, tp),
                        weights_bytes_per_rank=rank_weight_bytes(
                            layers, tp, weights, sides=BOTH_SIDES if layout is None else stage_sides(whole, layout)
                        ),
                        sequences_per_replica=1, stage=layout,
                    )
                    for layers, stage_kv, layout in priced
                ),
                key=lambda stage_plan: stage_plan.kv_tokens,
            )  # fmt: skip
        error = plan.kv_tokens / reported - 1
        mark = "*" if entry["id"] in VLLM_LOG_GENERATIONS else " "
        print(
            f"{entry['id']:>3} {entry['model'][:34]:34} {tp:>2}{pp_mark(pp)} {reported:>10,} {from_log:>10,} {plan.kv_tokens:>10,}"
            f"{mark}{error:>+7.1%}  {weights} {plan.weights_bytes_per_rank / GIB:.2f} / {entry['weights_gib']} GiB"
        )


def pp_mark(pp: int) -> str:
    """`` pp2`` after the tp column for a log of pipeline stages (each priced as its stage's worker), else ''."""
    return f" pp{pp}" if pp > 1 else ""


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
