"""Fit the shipped GPU priors on published serving measurements, and report their error on held-out ones.

    python benchmarks/fit_priors.py            # the shipped constants' error, per split and per GPU
    python benchmarks/fit_priors.py --fit      # refit on the `fit` rows, report, and show the constants
    python benchmarks/fit_priors.py --fit --write   # ... and write mha_cli/data/cost_priors.json
    python benchmarks/fit_priors.py --set 2025 [--fit [--write]] [--rows]   # per engine generation (below)
    python benchmarks/fit_priors.py --set 2025 --fit --generation trtllm-pytorch --write   # refit one generation
    python benchmarks/fit_priors.py --set 2025 --prefill [--write]   # only the prefill launch time, on fit TTFT
    python benchmarks/fit_priors.py --set 2025 --front-end   # diagnostic: a front end fitted on one-user fit rows
    python benchmarks/fit_priors.py --set 2025 --newest-rules   # every row by its generation's newest rules read

The rows are ``tests/fixtures/serving_benchmarks.yaml``; each usable row's ``mha`` block says what it is (preset,
target, tp, formats, static or continuous batching, concurrency, the measured TTFT / ITL / e2e). The fit minimises
the mean |log(predicted / measured)| over the `fit` rows by coordinate descent over multiplicative steps, starting
from the public measurements in ``benchmarks/cost_priors_sources.md``; the `holdout` rows never enter it.
Error per figure: |predicted - measured| / measured; reported as the median and the share within 25%.

``--set 2025``: the 2025-26 measurements of today's engines in ``tests/fixtures/serving_benchmarks_2025.yaml``. Each
row names its engine generation (vllm-v1, sglang-0.5, trtllm-pytorch, ...) and its source; the split is by source.
Each generation gets its own constants, fitted from the default ones on its `fit` sources only (and, where its fit
rows hold GPUs of both vendors, one set per vendor); the report gives the held-out error per generation and GPU for
mean ITL and output tokens/s per GPU, beside the same rows priced with the default (2023-24) constants as a control.
``--write`` stores them in ``mha_cli/data/cost_priors_generations.json``.
A row is priced as ``mha plan --engine ENGINE@RELEASE`` prices it, RELEASE the one its ``engine_version`` names
(``row_release``; a row naming none, such as a commit, by its generation's newest rules read, listed in the output)
(``core.cost.plan.LayoutPlans``: the engine's memory plan, the layout;
a config whose quantization_config is a scheme, tensor by tensor: ``checkpoint_scheme``),
with DP attention (``dp``: data-parallel attention ranks of ``tp`` GPUs each, the experts spread over all, reached
by the dispatch the row's launch line names: ``launch_a2a_backend``), speculative decoding (``speculative``:
method, k and the acceptance length the run printed), the sampler vLLM's profiling run took (``vllm_sampler``:
``row_sampler``) where the row states them, and SGLang's ``--scheduler-recv-interval`` and ``--chunked-prefill-size``
where its launch line sets them (``launch_recv_interval``, ``launch_chunk``). A row stating its benchmark client
(``client``: prompts, length spread; ``bench: sglang``: ``sglang.bench_serving``'s random-dataset lengths,
``row_client``) has all its figures (mean TTFT, mean TPOT, output tokens/s per GPU) read off ONE run of that client
simulated through the engine's scheduler, as ``mha plan``'s "simulated serving loop" table reports them (a burst at
request rate inf queues the first wave's prompts, and equal lengths under a full queue move in waves, both of which
the closed form's steady state leaves out); a row stating none is priced by the closed form. The fit cannot afford a
simulation at each of its evaluations, so it runs to a fixed point (``fit_generation``): simulate each client row once
at the current constants, fit the closed form times each row's ratios simulated / closed form (ITL, tokens/s),
simulate again at the fitted constants, until no constant moves 1% (at most 4 fits).

TTFT is judged on the run's median where the row's source prints one (``measured.ttft_median_ms``: the SGLang
cookbook's ``bench_serving`` outputs, every concurrency), else on its mean: such a row's simulated run gives its
median (``run.ttft_ms.median``), the closed form its one TTFT, and the prefill launch time's fit
(``fit_prefill_launch``) and the TTFT report both take the median. Why: a 10-prompt mean holds one-time first-use costs
(Triton compiles and autotuning at a server's or a prompt shape's first request) that no steady-state model prices.
DeepSeek-R1.md ran the same 10 prompt lengths twice on one server
(https://github.com/sgl-project/sgl-cookbook/blob/7b5bd9c05e3d86da5161ac2be9b91c19a34bf49d/docs/autoregressive/DeepSeek/DeepSeek-R1.md,
lines 371 and 532): mean 153.0 then 125.8 ms, median 140.8 then 126.2; on MI300X Llama-4-Scout's mean 4,247 ms is one
~42 s request over a 68.6 ms median (Llama4.md), and alone set AMD's launch time fitted on means (priors_2025.md,
sglttft). ITL and tokens/s stay means: the client's mean TPOT and the run's output rate.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, get_args

from mha_cli.core.compute_dtype import compute_dtype
from mha_cli.core.cost.plan import LayoutPlans, serving_case
from mha_cli.core.cost.priors import (
    ATTENTION_HALF_ROWS,
    FP4_EFFICIENCY,
    datasheet_profile,
    fitted_generation_for,
    fp4_share_applies,
    prior_profile,
)
from mha_cli.core.cost.serving import ServingCase, predict_serving
from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.engine.eager_launch import measured_launch
from mha_cli.core.engine.front_end import front_end
from mha_cli.core.engine.generations import generation_of, typed_release
from mha_cli.core.engine.mxfp4_moe import MARLIN_VARIABLE
from mha_cli.core.engine.prefill_graphs import UNDATED_MEASUREMENT, graphed_release, graphs_off
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.hf_quantization import read_checkpoint_weights
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import plan_memory
from mha_cli.core.presets import get_preset
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec, SpeculativeSpec, VllmSampler
from mha_cli.core.serve.replica import ClientSpec, simulate_deployment
from mha_cli.core.serve.sglang_random import sglang_random_lengths
from mha_cli.core.speculative import build_spec
from mha_cli.core.targets import ResolvedTarget, load_targets
from mha_cli.core.weight_scheme import WeightScheme

ROOT = Path(__file__).parent.parent
ROWS_FILE = ROOT / "tests" / "fixtures" / "serving_benchmarks.yaml"
ROWS_2025_FILE = ROOT / "tests" / "fixtures" / "serving_benchmarks_2025.yaml"
HF_CONFIGS = ROOT / "tests" / "fixtures" / "hf_configs"
PRIORS_FILE = ROOT / "mha_cli" / "data" / "cost_priors.json"
GENERATIONS_FILE = ROOT / "mha_cli" / "data" / "cost_priors_generations.json"

START = {
    "bandwidth_efficiency": 0.86,  # BabelStream copy/triad on H100 SXM 2.90-2.97 of 3.35 TB/s (Azure guide)
    "bandwidth_half_bytes": 4.0 * 2**20,  # no public figure: fitted
    "matmul_efficiency": 0.80,  # MAMF H100 SXM bf16 794.5 of 989 TFLOPS (stas00/ml-engineering)
    "matmul_half_rows": 64.0,  # no public figure: fitted
    "attention_efficiency": 0.5,  # no public figure: fitted
    "kernel_overhead_s": 3.4e-6,  # CUDA Graphs blog (V100): 3.4 us per kernel inside a graph
    "dispatch_overhead_s": 1e-5,  # CUDA Graphs blog: 9.6 us per synchronised launch; eager torch adds Python
    "step_overhead_s": 1e-3,  # vLLM V1: inter-step gap 0.15-6 ms (vllm#10634); fitted
    "all_reduce_latency_nvlink_s": 9.5e-6,  # vLLM custom all-reduce, 512 B, H100 TP2 (sglang#2904)
    "all_reduce_latency_pcie_s": 42e-6,  # nccl-tests 8 B, 8x RTX 4090 over PCIe (nccl#1530)
    "link_efficiency": 0.7,  # NCCL busbw 365-370 of 450 GB/s one way on H100 NVLink (nccl#1455): ~0.8; fitted
}
FITTED = [
    "bandwidth_efficiency", "bandwidth_half_bytes", "matmul_efficiency", "matmul_half_rows", "attention_efficiency",
    "kernel_overhead_s", "step_overhead_s", "all_reduce_latency_nvlink_s", "all_reduce_latency_pcie_s",
]  # fmt: skip
"""dispatch_overhead_s (eager torch) and link_efficiency (large messages) play no part in these rows."""
BOUNDS = {
    "bandwidth_efficiency": (0.3, 0.95), "matmul_efficiency": (0.2, 0.95), "attention_efficiency": (0.1, 0.9),
    FP4_EFFICIENCY: (0.2, 0.95),
}  # fmt: skip
ENGINES = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "trtllm", "nvidia nim": "trtllm"}
TTFT_MEDIAN = "ttft_median_ms"
"""A 2025 row's measured median TTFT (ms), where its source prints one: what its TTFT is judged on."""


class Row:
    """One usable measurement: the case it is, its target, and what was measured."""

    def __init__(self, index: int, raw: dict[str, Any]) -> None:
        mha = raw["mha"]
        self.index, self.url, self.split = index, raw["url"], mha["split"]
        self.target = load_targets()[mha["target"]]
        self.weight_dtype = mha["weight_dtype"]
        self.measured: dict[str, float] = {k: float(v) for k, v in mha["measured"].items()}
        model = get_preset(mha["preset"])
        admitted, chunk = None, 8192
        if mha["batching"] == "continuous":
            admitted, chunk = _engine_limits(model, self.target, mha)
        self.case = ServingCase(
            model=model, isl=mha["isl"], osl=mha["osl"], concurrency=mha["concurrency"], tp=mha["tp"],
            admitted_per_replica=admitted, chunk_tokens=chunk, weight_dtype=self.weight_dtype,
            kv_dtype=mha["kv_dtype"], batching=mha["batching"],
        )  # fmt: skip
        self.label = f"{mha['preset']} {mha['target']} tp{mha['tp']} {mha['isl']}/{mha['osl']} x{mha['concurrency']}"


FITTED_UNDER = {"vllm": "vllm-v1", "sglang": "sglang-0.5", "trtllm": "trtllm-pytorch"}
"""The memory rules each engine had when the shipped 2023-24 constants were fitted (V1, SGLang 0.5.3, TensorRT-LLM's
PyTorch backend): their rows keep being priced by them, so the fit reproduces what ``cost_priors.json`` holds."""


def _engine_limits(model: Any, target: Any, mha: dict[str, Any]) -> tuple[int, int]:
    """(requests admitted at once, prefill chunk) from the engine's memory plan at isl + osl tokens."""
    engine = next((name for key, name in ENGINES.items() if mha["engine"].lower().startswith(key)), "vllm")
    context = mha["isl"] + mha["osl"]
    kv = kv_footprint(model, seq_len=context, batch=mha["concurrency"], kv_dtype=mha["kv_dtype"], tp=mha["tp"])
    # the memory rules the shipped constants were fitted under (one per engine, before engine generations)
    deployment = DeploymentSpec(seq_len=context, tp=mha["tp"], engine=engine, weight_dtype=mha["weight_dtype"],
                                kv_dtype=mha["kv_dtype"], engine_generation=FITTED_UNDER[engine])  # fmt: skip
    resolved = ResolvedTarget(spec=target.id, target=target, n_devices=mha["tp"])
    plan = plan_memory(resolved, model=model, kv=kv, weight_dtype=mha["weight_dtype"], deployment=deployment)
    return max(1, plan.engine.admitted_per_replica), plan.engine.max_num_batched_tokens


def load_rows() -> list[Row]:
    raw = load_yaml_file(ROWS_FILE)
    return [Row(i, row) for i, row in enumerate(raw) if row.get("mha", {}).get("use")]


def row_release(engine: str, generation: str, text: str) -> str | None:
    """The release a row's ``engine_version`` text names, as ``mha plan --engine ENGINE@RELEASE`` reads one
    (``core.engine.generations.typed_release``): its first word where the rest is only a note in brackets
    (``'1.0 (PyTorch backend; ...)'`` -> ``1.0``, ``'0.9.1 (rocm/vllm:...)'`` -> ``0.9.1``, ``v0.15.1`` -> ``0.15.1``).
    None where it names none: a commit, a branch, a dev build (``0.0.0.dev1+g93fca0bbc``), a floor (``0.5.8+``), no
    text; such a row keeps its generation's newest rules. A release outside the row's generation is refused."""
    head, _, rest = text.strip().partition(" ")
    if rest.strip() and not rest.strip().startswith("("):
        return None
    release = typed_release(f"{engine}@{head}") if head else None
    if release is not None and generation_of(f"{engine}@{release}").id != generation:
        raise SystemExit(f"engine_version {text!r} is not a release of {generation}: fix the row")
    return release


class GenerationRow:
    """One usable 2025-26 measurement: its engine generation and source, the case ``mha plan`` would price, and what
    was measured (``itl_ms``, ``ttft_ms``, ``tokens_per_s_per_gpu``)."""

    def __init__(self, index: int, raw: dict[str, Any], *, by_release: bool = True) -> None:
        mha = raw["mha"]
        self.index, self.url, self.split = index, raw["url"], mha["split"]
        self.generation, self.source = mha["generation"], mha["source_id"]
        self.engine_version = str(raw.get("engine_version") or "")
        """The row's own words for the release it ran (``'0.9.1 (rocm/vllm:...)'``, ``commit 947927bdb``)."""
        self.release = row_release(mha["engine"], self.generation, self.engine_version)
        """The release that ran (``0.5.10.post1``), None where the text names none (``row_release``): its memory
        rules (``DeploymentSpec.engine_version``) and, for SGLang, whether its prefill runs in graphs."""
        self.graph_release = self.release
        """What dates a graphed prefill (``core.engine.prefill_graphs``): an SGLang row naming no release is priced
        as ``UNDATED_MEASUREMENT`` (eager), the meaning it was fitted with."""
        if self.release is None and str(mha["generation"]).startswith("sglang"):
            self.graph_release = UNDATED_MEASUREMENT
        memory_release = self.release if by_release else None
        self.priced_as = (
            f"{mha['engine']}@{memory_release}" if memory_release else f"{self.generation}'s newest rules read"
        )
        """What priced the row's memory plan: its release as ``mha plan --engine sglang@0.5.8`` takes it, else its
        generation's newest rules (no release named, or ``by_release`` off)."""
        self.target = load_targets()[mha["target"]]
        self.weight_dtype = mha["weight_dtype"]
        self.measured: dict[str, float] = {k: float(v) for k, v in mha["measured"].items()}
        """What the source printed, as the fixture records it (``ttft_ms`` the mean TTFT, ``ttft_median_ms`` its
        median where the source prints one)."""
        scheme = None
        if "config" in mha:
            path = HF_CONFIGS / mha["config"]
            config = json.loads(path.read_text())
            model = import_hf_config(config, name=mha["config"].removesuffix(".json")).model
            origin, kind = str(path), "hf-config"
            scheme = checkpoint_scheme(config, mha["config"], self.weight_dtype)
        else:
            model = get_preset(mha["preset"])
            origin, kind = mha["preset"], "preset"
        tp, pp, dp = mha["tp"], mha.get("pp", 1), mha.get("dp")
        deployment = DeploymentSpec(
            seq_len=mha["isl"] + mha["osl"], tp=tp, engine=mha["engine"], weight_dtype=self.weight_dtype,
            weight_scheme=scheme, checkpoint_format=scheme.format if scheme else None,
            kv_dtype=mha["kv_dtype"], gpu_memory_utilization=mha.get("gpu_memory_utilization"),
            engine_generation=self.generation, engine_version=memory_release,  # the release's memory rules
            dp=dp, speculative=_speculative(model, origin, kind, mha.get("speculative")),
            moe_a2a_backend=launch_a2a_backend(raw) if dp else None, vllm_mxfp4_kernel=launch_mxfp4_kernel(raw),
            vllm_sampler=row_sampler(mha), scheduler_recv_interval=launch_recv_interval(raw),
            max_num_batched_tokens=launch_chunk(raw),
        )  # fmt: skip
        resolved = ResolvedTarget(spec=self.target.id, target=self.target, n_devices=tp * pp * (dp or 1))
        ceiling = datasheet_profile(self.target, self.weight_dtype)
        layout = LayoutPlans(
            model, resolved, deployment, ceiling, ceiling, isl=mha["isl"], osl=mha["osl"], tp=tp, pp=pp
        )
        stated = mha.get("client")
        self.client = None if stated is None else row_client(stated)
        """The benchmark client's run (``client``: its prompts and length spread), where the row states it: its mean
        TTFT, mean TPOT and tokens/s per GPU are read off that run simulated (``simulated_figures``), not the closed
        form's steady state."""
        self.max_concurrency = mha["concurrency"]
        """The users the row states (the client's ``--max-concurrency``); ``case.concurrency`` is what it priced
        (``client_users``)."""
        users = client_users(self.max_concurrency, self.client)
        memory = layout.at(users).memory  # the engine's plan: what it admits, its prefill chunk
        self.engine_plan = memory.engine
        """What the engine allocates on one rank as the release priced (``core.engine.plan.EnginePlan``)."""
        self.case = serving_case(
            model, layout.deployment, memory, isl=mha["isl"], osl=mha["osl"], concurrency=users, pp=pp,
            replicas=layout.replicas, experts=layout.experts,
        )  # fmt: skip
        self.ceiling, self.stepper = ceiling, Stepper(self.case, ceiling)
        self.engine = memory.engine
        name = mha.get("preset") or mha["config"].removesuffix(".json")
        layout = f"tp{tp}pp{pp}" + (f"dp{dp}" if dp else "") + (" spec" if "speculative" in mha else "")
        self.label = f"{name} {mha['target']} {layout} {mha['isl']}/{mha['osl']} x{mha['concurrency']}"

    @property
    def ttft_statistic(self) -> str:
        """``median`` where the source prints the run's median TTFT (``TTFT_MEDIAN``), else ``mean``: what the row's
        TTFT is judged on (the module's docstring: first-use outliers in the means)."""
        return "median" if TTFT_MEDIAN in self.measured else "mean"

    @property
    def judged(self) -> dict[str, float]:
        """The figures the row is judged on (ms, tokens/s): ``measured`` with ``ttft_ms`` its median TTFT where the
        source prints one (``ttft_statistic``), its mean otherwise."""
        figures = {key: value for key, value in self.measured.items() if key != TTFT_MEDIAN}
        if TTFT_MEDIAN in self.measured:
            figures["ttft_ms"] = self.measured[TTFT_MEDIAN]
        return figures

    def predict(
        self, constants: dict[str, float] | None, keys: tuple[str, ...] | None = None, *, simulated: bool = True
    ) -> dict[str, float]:
        """The judged figures (``judged``; those of ``keys`` only, where given) as predicted with ``constants``
        (None: the shipped ones of the row's generation). A row stating its client has every figure read off that
        client's run, simulated once (``simulated_figures``: TTFT the run's median or mean, as ``ttft_statistic``);
        ``simulated`` False prices it by the closed form (the fit's loss, times the run's ratios: ``client_ratios``;
        the launch time's TTFT fit: ``ttft_loss``), whose one TTFT stands for either statistic."""
        profile = prior_profile(
            self.target, self.weight_dtype, constants, generation=self.generation, release=self.graph_release
        )
        wanted = [key for key in self.judged if keys is None or key in keys]
        if self.client is not None and simulated:
            figures = self.simulated_figures(profile)
        else:
            result = predict_serving(self.case, profile, self.ceiling, stepper=self.stepper.on(profile))
            figures = {"ttft_ms": result.ttft_ms, "itl_ms": result.itl_ms,
                       "tokens_per_s_per_gpu": result.output_tokens_per_s_per_gpu}  # fmt: skip
        return {key: figures[key] for key in wanted}

    def simulated_figures(self, profile: Any) -> dict[str, float]:
        """The row's figures off its benchmark run on ``profile``, as ``mha plan``'s "simulated serving loop" table
        prints them: its ``client`` simulated once through the engine's scheduler
        (``core.serve.replica.simulate_deployment``). ``ttft_ms``: the run's median TTFT where the row is judged on
        the median (``ttft_statistic``), else its mean; ``itl_ms``: its mean TPOT (what
        every client row's ``itl_ms`` is, the fixture's header: the client's mean TPOT); ``tokens_per_s_per_gpu``: the
        deployment's output tokens/s over its tp x pp x replicas GPUs (``plan_cmd``'s per-GPU figure).

        ``vllm bench serve`` at ``--request-rate inf --max-concurrency N`` sends N requests at t = 0 and the next as
        one ends, timing each from its send after the semaphore (``vllm/benchmarks/serve.py``, ``get_request``,
        ``limited_request_func``; InferenceX's ``utils/bench_serving/benchmark_serving.py`` is the same loop): the
        first wave's prompts queue behind one another for the step's token budget, which the closed form's
        steady-state wait leaves out. ``sglang.bench_serving`` runs the same loop (``sglang/bench_serving.py`` 0.5.8:
        ``get_request`` yields at once at rate inf, ``limited_request_func`` holds the semaphore,
        ``async_request_sglang_generate`` starts its clock inside it); its one warm-up request finishes before the
        timed run starts. Equal lengths and a full queue move in waves (priors_2025.md, sglh200): a request's TPOT
        carries the prompts after its own in its wave, about (running - 1) / 2, where the closed form puts all
        running - 1 others' prompts in every request's life."""
        run = simulate_deployment(self.case, profile, self.engine, self.client)
        gpus = self.case.tp * self.case.pp * self.case.replicas
        return {
            "ttft_ms": run.ttft_ms.at(50 if self.ttft_statistic == "median" else 0), "itl_ms": run.tpot_ms.mean,
            "tokens_per_s_per_gpu": run.deployment_output_tokens_per_s / gpus,
        }  # fmt: skip


def client_users(concurrency: int, client: ClientSpec | None) -> int:
    """Requests the row's run had in flight at most: its ``--max-concurrency``, and no more than the prompts its
    client sent in all (``num_prompts``). ``vllm bench serve`` (``vllm/benchmarks/serve.py``, ``benchmark``, read
    in the 0.10.2 and 0.32.0 wheels, the loop alike in both: one ``limited_request_func`` task per request
    ``get_request`` yields from the ``num_prompts`` sampled, each holding the ``max_concurrency`` semaphore) never
    has more than ``num_prompts`` requests open: Vultr's 400 prompts at 512 and 1,024 users are one run of 400 at
    once, as the simulated client run holds them (``max_running`` 400)."""
    if client is None or client.num_prompts is None:
        return concurrency
    return min(concurrency, client.num_prompts)


def row_client(stated: dict[str, Any]) -> ClientSpec:
    """The benchmark client a row's ``client`` block states: ``vllm bench serve``'s (``num_prompts``,
    ``range_ratio`` about the row's isl and osl), or with ``bench: sglang`` the lengths ``sglang.bench_serving
    --dataset-name random`` sends, request by request, from its ``random_input_len``, ``random_output_len`` and
    ``range_ratio`` (``core.serve.sglang_random``: uniform over [max(int(L r), 1), L], seed 1)."""
    if stated.get("bench") != "sglang":
        return ClientSpec(stated["num_prompts"], stated["range_ratio"])
    lengths = sglang_random_lengths(
        stated["random_input_len"], stated["random_output_len"], stated["num_prompts"],
        range_ratio=stated["range_ratio"],
    )  # fmt: skip
    return ClientSpec(stated["num_prompts"], lengths=lengths)


def checkpoint_scheme(config: dict[str, Any], origin: str, weight_dtype: str) -> WeightScheme | None:
    """The scheme the checkpoint's quantization_config prices its weights by, tensor by tensor, when the row's
    ``weight_dtype`` is that scheme's format (as ``mha plan`` prices a config.json: ``core.sources``); else None."""
    stored = read_checkpoint_weights(config, origin)
    scheme = stored.scheme if stored is not None else None
    return scheme if scheme is not None and scheme.format == weight_dtype else None


DEEPEP_FLAGS = ("--moe-a2a-backend deepep", "--enable-deepep-moe", "--all2all-backend deepep", "ALL2ALL_BACKEND=deepep")
"""How a launch asks for DeepEP: SGLang 0.5's ``--moe-a2a-backend``, SGLang 0.4's ``--enable-deepep-moe``, vLLM's
``--all2all-backend`` and its older ``VLLM_ALL2ALL_BACKEND`` variable."""


def launch_a2a_backend(raw: dict[str, Any]) -> str:
    """How a DP attention row's engine reached the experts, read from what the row records: its ``mha`` block's
    ``moe_a2a_backend`` where stated, else its launch line (``notes``' ``server:`` command): ``deepep`` when it asks
    for DeepEP, else ``none`` (both engines' default: gather and scatter, ``core.dp_attention``)."""
    stated = raw["mha"].get("moe_a2a_backend")
    if stated is not None:
        return stated
    launch = " ".join(str(raw.get("notes", "")).split())  # the YAML folds long lines
    return "deepep" if any(flag in launch for flag in DEEPEP_FLAGS) else "none"


def launch_mxfp4_kernel(raw: dict[str, Any]) -> str | None:
    """The MXFP4 MoE kernel a vLLM row's launch line forces (``notes``' ``server:`` command, an input, not a fit):
    ``marlin`` where it sets ``VLLM_MXFP4_USE_MARLIN=1`` (``core.engine.mxfp4_moe.marlin_forced``), else None (the
    release's default)."""
    launch = " ".join(str(raw.get("notes", "")).split())  # the YAML folds long lines
    return "marlin" if f"{MARLIN_VARIABLE}=1 vllm serve" in launch else None


def sglang_launch_flag(raw: dict[str, Any], flag: str) -> int | None:
    """The whole number an SGLang row's launch line gives ``flag`` (``notes``' ``sglang.launch_server`` command, up
    to the sentence that follows it: an input, not a fit); None where the row has no such command or it sets none
    (SGLang's default)."""
    notes = " ".join(str(raw.get("notes", "")).split())  # the YAML folds long lines
    start = notes.find("sglang.launch_server")
    if start < 0:
        return None
    end = notes.find(". ", start)
    found = re.search(rf"{re.escape(flag)}[ =](\d+)", notes[start : end if end > 0 else None])
    return int(found.group(1)) if found else None


def launch_recv_interval(raw: dict[str, Any]) -> int | None:
    """The ``--scheduler-recv-interval`` an SGLang row's launch line sets (``core.serve.recv_interval``)."""
    return sglang_launch_flag(raw, "--scheduler-recv-interval")


def launch_chunk(raw: dict[str, Any]) -> int | None:
    """The ``--chunked-prefill-size`` an SGLang row's launch line sets: its step's prompt budget, which mha prices as
    ``max_num_batched_tokens`` (``core.cost.search.launch_commands`` writes the one as the other)."""
    return sglang_launch_flag(raw, "--chunked-prefill-size")


def row_sampler(mha: dict[str, Any]) -> VllmSampler | None:
    """The top-k/top-p sampler a vLLM row's profiling run took, where its ``mha`` block states it (``vllm_sampler``,
    read from the row's source: its log's sampler line, or what the source shows its server imported, cited in its
    notes); None: the release's default (``core.engine.sampler.default_sampler``). A value mha does not model, or one
    on another engine's row, is refused in one line."""
    stated = mha.get("vllm_sampler")
    if stated is None:
        return None
    if stated not in get_args(VllmSampler):
        raise SystemExit(f"vllm_sampler {stated!r} is none of {', '.join(get_args(VllmSampler))}: fix the row")
    if str(mha["engine"]).lower() != "vllm":
        raise SystemExit(f"vllm_sampler is vLLM's profiling sampler: a {mha['engine']} row has none; fix the row")
    return stated


def _speculative(model: Any, origin: str, kind: str, stated: dict[str, Any] | None) -> SpeculativeSpec | None:
    """The row's speculative decoding as ``mha plan`` prices it: its method, the k drafted tokens and the acceptance
    length its benchmark printed (``speculative``: ``method``, ``k``, ``acceptance_length``); None without."""
    if stated is None:
        return None
    return build_spec(
        model, origin=origin, kind=kind, method=stated["method"], num_speculative_tokens=stated["k"],
        acceptance_length=stated["acceptance_length"],
    )  # fmt: skip


def load_generation_rows(*, by_release: bool = True) -> list[GenerationRow]:
    """The usable rows of ``serving_benchmarks_2025.yaml`` (those without a ``not_expressible`` reason), each priced
    by the release it names (``by_release`` False: by its generation's newest rules, as before rows named theirs)."""
    raw = load_yaml_file(ROWS_2025_FILE)
    return [GenerationRow(i, row, by_release=by_release) for i, row in enumerate(raw) if row.get("mha", {}).get("use")]


def print_releases(rows: list[GenerationRow]) -> None:
    """Per generation, the releases that price its rows (and how many each), and every row naming none."""
    for generation in sorted({row.generation for row in rows}):
        mine = [row for row in rows if row.generation == generation]
        counts: dict[str, int] = defaultdict(int)
        for row in mine:
            counts[row.priced_as] += 1
        print(f"{generation} rows priced by: " + ", ".join(f"{name} x{n}" for name, n in sorted(counts.items())))
        for row in mine:
            if row.release is None:
                print(f"    #{row.index:3} names no release ({row.engine_version!r}): {row.priced_as}")


def predictions(
    row: Row | GenerationRow, constants: dict[str, float] | None, keys: tuple[str, ...] | None = None
) -> dict[str, float]:
    """The figures ``row`` measured (a generation row's of ``keys`` only, where given), as predicted with
    ``constants`` (None: the shipped ones)."""
    if isinstance(row, GenerationRow):
        return row.predict(constants, keys)
    profile = prior_profile(row.target, row.weight_dtype, constants)
    ceiling = datasheet_profile(row.target, row.weight_dtype)
    result = predict_serving(row.case, profile, ceiling)
    figures = {"ttft_ms": result.ttft_ms, "itl_ms": result.itl_ms, "e2e_ms": result.e2e_ms}
    return {key: figures[key] for key in row.measured}


def errors(
    rows: list[Row], constants: dict[str, float] | None, keys: tuple[str, ...] | None = None
) -> list[tuple[Row, str, float, float]]:
    """(row, figure, predicted, measured) for every measured figure (a generation row's of ``keys`` only)."""
    out = []
    for row in rows:
        for key, value in predictions(row, constants, keys).items():
            out.append((row, key, value, row.measured[key]))
    return out


def loss(rows: list[Row], constants: dict[str, float]) -> float:
    return statistics.fmean(abs(math.log(p / m)) for _, _, p, m in errors(rows, constants))


def fit(
    rows: list[Any], start: dict[str, float], rounds: int = 4, names: list[str] = FITTED, objective: Any = None
) -> dict[str, float]:
    """Coordinate descent: each constant of ``names`` in turn times the step that lowers ``objective`` (``loss`` by
    default) most, steps shrinking."""
    objective = objective or loss
    best, best_loss = dict(start), objective(rows, start)
    for step in [2.0, 1.4, 1.15, 1.05][:rounds]:
        for name in names:
            for factor in (step, 1 / step, step**2, 1 / step**2):
                trial = dict(best)
                low, high = BOUNDS.get(name, (0.0, math.inf))
                trial[name] = min(high, max(low, best[name] * factor))
                trial_loss = objective(rows, trial)
                if trial_loss < best_loss - 1e-9:
                    best, best_loss = trial, trial_loss
    return best


def summary(found: list[tuple[Row, str, float, float]]) -> dict[str, float]:
    """Figures, median and 80th-percentile |predicted - measured| / measured, and the share within 25%."""
    relative = sorted(abs(p - m) / m for _, _, p, m in found)
    return {
        "figures": len(relative),
        "median_abs_error": round(statistics.median(relative), 4),
        "p80_abs_error": round(relative[min(len(relative) - 1, int(0.8 * len(relative)))], 4),
        "share_within_25pct": round(sum(r <= 0.25 for r in relative) / len(relative), 4),
    }


def report(rows: list[Row], constants: dict[str, float] | None, *, show_rows: bool) -> dict[str, Any]:
    found = errors(rows, constants)
    result: dict[str, Any] = {}
    for split in ("fit", "holdout"):
        part = [e for e in found if e[0].split == split]
        by_gpu: dict[str, list] = defaultdict(list)
        for e in part:
            by_gpu[e[0].target.id].append(e)
        result[split] = summary(part) | {"per_gpu": {gpu: summary(es) for gpu, es in sorted(by_gpu.items())}}
        print(f"\n{split}: {result[split]['figures']} figures from {len({e[0].index for e in part})} rows,"
              f" median error {result[split]['median_abs_error']:.1%},"
              f" within 25%: {result[split]['share_within_25pct']:.0%}")  # fmt: skip
        for gpu, s in result[split]["per_gpu"].items():
            print(f"  {gpu:16} {s['figures']:3} figures  median {s['median_abs_error']:6.1%}"
                  f"  80th pct {s['p80_abs_error']:6.1%}  within 25% {s['share_within_25pct']:4.0%}")  # fmt: skip
        if show_rows:
            for row, key, p, m in part:
                print(
                    f"    #{row.index:3} {row.label:44} {key:7} predicted {p:9.1f}  measured {m:9.1f}  {p / m - 1:+6.0%}"
                )
    result["fit_rows"] = sorted({e[0].index for e in found if e[0].split == "fit"})
    return result


GENERATION_FITTED = [
    "bandwidth_efficiency", "bandwidth_half_bytes", "matmul_efficiency", "matmul_half_rows", "attention_efficiency",
    "kernel_overhead_s", "step_overhead_s", "all_reduce_latency_nvlink_s",
]  # fmt: skip
"""What a generation refits (its engine's kernels, graphs and scheduler); the PCIe latency has no 2025 row."""
MEASURED_STEP_CONSTANTS: dict[tuple[str, str], dict[str, float]] = {}
"""(generation, GPU vendor lower-cased) -> step constants held at a public measurement instead of fitted, where
every fit row is of that generation and vendor (``held_constants``), as ``core.engine.eager_launch`` holds
sglang-0.5's prefill launch time on NVIDIA (priors_2025.md, sglfloor). Shipped empty: vllmar (priors_2025.md) held
vllm-v1's NVIDIA ``all_reduce_latency_nvlink_s``, which its fit rows leave confounded with the step and kernel
overheads (H100 at tp 1 without all-reduces, B200 at tp 2 with 52 in every step), at vLLM's custom all-reduce
measured on H100 (9.5 us at 512 B and tp 2 outside CUDA graphs, https://github.com/sgl-project/sglang/pull/2904) and
at FlashInfer's one-shot all-reduce + RMSNorm in a CUDA graph (6.98 us, tp 2, 72 KB,
https://github.com/flagos-ai/FlagGems-vllm/pull/773):
both refits left vllm-v1's held-out ITL worse (14.2% -> 18.9%, 17.6%), so neither was written."""


def held_constants(rows: list[GenerationRow]) -> dict[str, float]:
    """The constants ``MEASURED_STEP_CONSTANTS`` holds for ``rows``: those of their one (generation, vendor); none
    where the rows mix generations or vendors (a joint set fits its own) or hold none."""
    pairs = {(row.generation, row.target.vendor.lower()) for row in rows}
    return dict(MEASURED_STEP_CONSTANTS.get(pairs.pop(), {})) if len(pairs) == 1 else {}


FIT_FIGURES = ("itl_ms", "tokens_per_s_per_gpu")
"""The figures a generation is fitted on and judged by; TTFT (mostly queueing behind others' prompts) is reported."""
MIN_VENDOR_ROWS = 6
"""Fit rows each vendor needs before a generation gets one set of constants per vendor."""


def _rounded(constants: dict[str, float]) -> dict[str, float]:
    return {k: float(f"{v:.4g}") for k, v in constants.items()}  # what the file keeps, and what is reported


def generation_loss(
    rows: list[GenerationRow], constants: dict[str, float], *, ratios: dict[int, dict[str, float]]
) -> float:
    """Mean |log(predicted / measured)| over the rows' mean ITL and tokens/s per GPU, each by the closed form times
    its row's ``ratios`` (``client_ratios``: a client row's simulated run over the closed form; 1 for the others).
    No simulation runs here: the coordinate descent evaluates this some 130 times a fit."""
    found = []
    for row in rows:
        scale = ratios.get(row.index, {})
        for key, value in row.predict(constants, FIT_FIGURES, simulated=False).items():
            found.append((value * scale.get(key, 1.0), row.judged[key]))
    return statistics.fmean(abs(math.log(p / m)) for p, m in found)


def client_ratios(rows: list[GenerationRow], constants: dict[str, float]) -> dict[int, dict[str, float]]:
    """Per row stating its client (by index): its simulated run's ITL and tokens/s per GPU over the closed form's,
    both with ``constants``: one simulated run a row (``GenerationRow.simulated_figures``)."""
    ratios = {}
    for row in rows:
        if row.client is None:
            continue
        closed = row.predict(constants, FIT_FIGURES, simulated=False)
        run = row.predict(constants, FIT_FIGURES)
        ratios[row.index] = {key: run[key] / closed[key] for key in closed}
    return ratios


PREFILL_FITTED = ["prefill_dispatch_overhead_s"]
"""What a generation whose prefill runs outside CUDA graphs (``core.engine.prefill_graphs``) fits on TTFT alone."""


def ttft_loss(rows: list[GenerationRow], constants: dict[str, float]) -> float:
    """Mean |log(predicted / measured)| over the rows' judged TTFT (``GenerationRow.judged``: the run's median
    where the source prints one, else its mean), each by the closed form (a lone request's prefill, half a decode step
    and the front end), as the shipped ``prefill_dispatch_overhead_s`` was fitted: pricing the lone rows by their
    simulated client runs instead moves its refit (priors_2025.md, sglclient), the lead's call."""
    found = [(row.predict(constants, ("ttft_ms",), simulated=False)["ttft_ms"], row.judged["ttft_ms"]) for row in rows]
    return statistics.fmean(abs(math.log(p / m)) for p, m in found)


FIXED_POINT_ROUNDS = 4
"""At most this many fits on the simulated runs' ratios (``fit_generation``)."""
FIXED_POINT_MOVE = 0.01
"""The fixed point is reached when no fitted constant moves more than this (relative) from one round to the next."""


def fit_generation(rows: list[GenerationRow], start: dict[str, float]) -> dict[str, float]:
    """``fit``'s coordinate descent on ``generation_loss``, over ``GENERATION_FITTED`` (and ``fp4_matmul_efficiency``,
    from ``matmul_efficiency``'s start, where ``MIN_FP4_ROWS`` rows hold fp4 GEMMs: ``holds_fp4_gemms``; and
    ``attention_half_rows``, from ``matmul_half_rows``'s start, for a generation of ``OWN_ATTENTION_RAMP``), from
    ``start``, less what ``held_constants`` holds at a measurement; then, for a
    generation whose prefill runs outside CUDA graphs, its host launch time per prefill kernel on the rows' TTFT alone
    (``fit_prefill_launch``), the step constants kept.

    Rows stating their client are judged on their simulated runs (``GenerationRow.simulated_figures``), too slow to
    run at each of the descent's evaluations (a pass over sglang-0.5's 29 client fit rows takes 4.7 s on this machine,
    over vllm-v1's 9 0.9 s; a fit evaluates 129 times, and sglang-0.5 fits three sets, vllm-v1 two: about 24 min of
    simulation against 10 min allowed, priors_2025.md, simitl). So a fixed point: at the current constants (``start``
    first) each client row is simulated once and its ratios simulated / closed form taken (``client_ratios``); the
    descent fits the closed form times those ratios, from ``start`` again; the rows are simulated anew at the fitted
    constants, and so on until no constant moves more than ``FIXED_POINT_MOVE``, at most ``FIXED_POINT_ROUNDS`` fits
    (each printed). Rows without a client need one fit, as before."""
    held = held_constants(rows)  # measured, not fitted
    names, start = [name for name in GENERATION_FITTED if name not in held], start | held
    if sum(holds_fp4_gemms(row) for row in rows) >= MIN_FP4_ROWS:  # their own share of the fp4 peak
        names.append(FP4_EFFICIENCY)
        start = start | {FP4_EFFICIENCY: start.get(FP4_EFFICIENCY, start["matmul_efficiency"])}
    if any(row.generation in OWN_ATTENTION_RAMP for row in rows):  # prompt attention apart from the GEMMs' ramp
        names.append(ATTENTION_HALF_ROWS)
        start = start | {ATTENTION_HALF_ROWS: start.get(ATTENTION_HALF_ROWS, start["matmul_half_rows"])}
    constants = dict(start)
    for round_ in range(1, FIXED_POINT_ROUNDS + 1):
        ratios = client_ratios(rows, constants)
        objective = functools.partial(generation_loss, ratios=ratios)
        fitted = _rounded(fit(rows, start, names=names, objective=objective))
        if not ratios:
            constants = fitted
            break
        name, move = max(((k, abs(fitted[k] / constants[k] - 1)) for k in names), key=lambda m: m[1])
        print(f"  fixed point round {round_}: {len(ratios)} client rows simulated; largest move {move:.1%} ({name})")
        constants = fitted
        if move < FIXED_POINT_MOVE:
            break
    else:
        print(f"  fixed point: not reached in {FIXED_POINT_ROUNDS} rounds; the last fit kept")
    return fit_prefill_launch(rows, constants)


MIN_FP4_ROWS = MIN_VENDOR_ROWS
"""Fit rows holding fp4 GEMMs a generation needs before it fits their own share of the fp4 rate (as a vendor needs
``MIN_VENDOR_ROWS`` for its own constants): sglang-0.5's 4 are the Qwen3.6-27B-NVFP4 cells that priors_2025.md
(sglqwen36) found priced as W4A4 while their MLPs run W4A16; trtllm-pytorch's 20 are Llama-3.3-70B on B200/GB200."""


OWN_ATTENTION_RAMP = ("sglang-0.5",)
"""The generations whose fit takes prompt attention's half rows (``core.cost.priors.ATTENTION_HALF_ROWS``) apart from
the weight GEMMs' ramp (``matmul_half_rows``): one constant shaped both since gemmramp, and sglang-0.5's refit on it
ended at its bounds (NVIDIA matmul efficiency 0.95) without a fixed point (priors_2025.md, sglreg). Its refit with the
split moves long prompts' TTFT and no held-out ITL or tokens/s by 5 points (sglramp). The others keep one constant
for both until a refit of theirs is judged with the split."""


def holds_fp4_gemms(row: GenerationRow) -> bool:
    """Whether ``row``'s weight format runs its matmuls as the fp4 GEMMs ``fp4_matmul_efficiency`` prices
    (``core.cost.priors.fp4_share_applies``: NVFP4 on B200, GB200, B300, GB300): the rows that fit it."""
    return fp4_share_applies(row.target, compute_dtype(row.weight_dtype))


def fit_prefill_launch(rows: list[GenerationRow], constants: dict[str, float]) -> dict[str, float]:
    """``constants`` with ``prefill_dispatch_overhead_s`` fitted on the TTFT of ``rows`` at one user (the run's
    median where the source prints one, else its mean: ``ttft_loss``; fit rows only: the caller passes no held-out
    row), from ``dispatch_overhead_s``. A lone request's TTFT is its prefill, half
    a decode step and the front end; with more users it holds the wait behind the others' prompts too (the closed
    form's queue, which a burst of arrivals at the run's start exceeds), which this constant must not absorb; unchanged for a generation whose prefill is graphed
    or rows without a TTFT. Where every such row's generation carries one measured launch time for its GPU's vendor
    (``core.engine.eager_launch``), that value is held, not fitted: TTFT's other parts cannot pull it."""
    timed = [
        row for row in rows
        if "ttft_ms" in row.measured and row.case.concurrency == LONE_USERS
        and _eager_prefill(row)
    ]  # fmt: skip
    if not timed:
        return constants
    assert all(row.split == "fit" for row in timed), "a held-out row in a fit"
    measured = {measured_launch(row.generation, row.target.vendor) for row in timed}
    if len(measured) == 1 and None not in measured:
        return constants | {"prefill_dispatch_overhead_s": measured.pop().seconds}  # type: ignore[union-attr]
    start = constants | {"prefill_dispatch_overhead_s": constants["dispatch_overhead_s"]}  # a refit starts anew
    return _rounded(fit(timed, start, names=PREFILL_FITTED, objective=ttft_loss))


def _eager_prefill(row: GenerationRow) -> bool:
    """Whether every prompt step of ``row`` runs outside CUDA graphs (``core.engine.prefill_graphs``): an SGLang
    release without piecewise prefill graphs, or one whose ``graphs_off`` turns them off for the row's case."""
    if not row.generation.startswith("sglang"):
        return False
    release = graphed_release(row.generation, row.release, row.target.vendor)
    return release is None or graphs_off(row.case, release) is not None


def fit_generations(rows: list[GenerationRow], default: dict[str, float]) -> dict[str, dict[str, Any]]:
    """Per generation with fit rows: its constants, from ``default``, on its fit sources; where both vendors have
    ``MIN_VENDOR_ROWS`` fit rows, one set per vendor as well, each from ``default`` on that vendor's rows alone (a
    start from the generation's joint fit drags one vendor toward the other's engine)."""
    fitted: dict[str, dict[str, Any]] = {}
    for generation in sorted({row.generation for row in rows}):
        mine = [row for row in rows if row.generation == generation]
        fit_rows = [row for row in mine if row.split == "fit"]
        if not fit_rows:
            continue
        constants = fit_generation(fit_rows, default)
        entry: dict[str, Any] = {
            "constants": constants, "gpus": sorted({row.target.id for row in fit_rows}),
            "fitted_on": sorted({row.source for row in fit_rows}),
            "held_out": sorted({row.source for row in mine if row.split == "holdout"}),
        }  # fmt: skip
        by_vendor: dict[str, list[GenerationRow]] = defaultdict(list)
        for row in fit_rows:
            by_vendor[row.target.vendor.lower()].append(row)
        entry["fitted_vendors"] = sorted(by_vendor)  # another vendor's GPUs keep the default constants
        if len(by_vendor) > 1 and all(len(part) >= MIN_VENDOR_ROWS for part in by_vendor.values()):
            entry["vendors"] = {
                vendor: {"constants": fit_generation(part, default), "gpus": sorted({r.target.id for r in part})}
                for vendor, part in sorted(by_vendor.items())
            }
        fitted[generation] = entry
    return fitted


def measured_figures(rows: list[GenerationRow], generation: str, vendor: str | None = None) -> list[str]:
    """The figures ``generation``'s fit rows measured (on ``vendor``'s GPUs), of ``FIT_FIGURES`` and TTFT: a set
    fitted on throughput alone says so where it prices a latency (trial 402 #2: AMD's vLLM V1 rows)."""
    fit_rows = [row for row in rows if row.generation == generation and row.split == "fit"]
    mine = [row for row in fit_rows if vendor is None or row.target.vendor.lower() == vendor]
    return sorted({key for row in mine for key in row.judged})


def refit_prefill_launch(rows: list[GenerationRow], generations: dict[str, dict[str, Any]]) -> None:
    """``--prefill``: in place, each graphless-prefill generation's ``prefill_dispatch_overhead_s`` (and each vendor's
    where fitted apart) fitted on its fit rows' TTFT (``fit_prefill_launch``), its shipped step constants kept."""
    for generation, entry in generations.items():
        fit_rows = [row for row in rows if row.generation == generation and row.split == "fit"]
        entry["constants"] = fit_prefill_launch(fit_rows, entry["constants"])
        for vendor, family in entry.get("vendors", {}).items():
            part = [row for row in fit_rows if row.target.vendor.lower() == vendor]
            family["constants"] = fit_prefill_launch(part, family["constants"])


def constants_for(row: GenerationRow, generations: dict[str, dict[str, Any]], default: dict[str, float]) -> dict:
    """The constants ``generations`` price ``row`` with (``core.cost.priors.generation_prior``'s choice: the row's
    generation's fit for its vendor, else the nearest earlier one's of its engine, else ``default``)."""
    priced_by = fitted_generation_for(row.generation, row.target.vendor, generations)
    if priced_by is None:
        return default
    entry = generations[priced_by]
    family = entry.get("vendors", {}).get(row.target.vendor.lower())
    return family["constants"] if family else entry["constants"]


def generation_errors(
    rows: list[GenerationRow], generations: dict[str, dict[str, Any]] | None, default: dict[str, float]
) -> list[tuple[GenerationRow, str, float, float]]:
    """(row, figure, predicted, measured) with each row's generation constants (None: the default for all rows)."""
    out = []
    for row in rows:
        constants = default if generations is None else constants_for(row, generations, default)
        for key, value in row.predict(constants).items():
            out.append((row, key, value, row.judged[key]))
    return out


def generation_report(
    rows: list[GenerationRow], generations: dict[str, dict[str, Any]], default: dict[str, float], *, show_rows: bool
) -> dict[str, dict[str, Any]]:
    """Per generation and split: each figure's error with the generation's constants and, as the control, with the
    default ones; per GPU the same. TTFT is each row's median where its source prints one, else its mean
    (``GenerationRow.judged``), the count of each printed. Printed, and returned for cost_priors_generations.json."""
    new, old = generation_errors(rows, generations, default), generation_errors(rows, None, default)
    return report_of_errors(new, old, show_rows=show_rows)


def report_of_errors(
    new: list[tuple[GenerationRow, str, float, float]],
    old: list[tuple[GenerationRow, str, float, float]],
    *,
    show_rows: bool,
) -> dict[str, dict[str, Any]]:
    """``generation_report`` of errors already found: ``new`` with each generation's constants, ``old`` (the
    control) with the default ones, the same rows and figures in the same order (``generation_errors``)."""
    result: dict[str, dict[str, Any]] = {}
    for generation in sorted({e[0].generation for e in new}):
        result[generation] = {}
        for split in ("fit", "holdout"):
            pick = [i for i, e in enumerate(new) if e[0].generation == generation and e[0].split == split]
            if not pick:
                continue
            part, control = [new[i] for i in pick], [old[i] for i in pick]
            figures = {}
            for key in sorted({e[1] for e in part}):
                mine = [e for e in part if e[1] == key]
                per_gpu = {gpu: summary([e for e in mine if e[0].target.id == gpu])
                           for gpu in sorted({e[0].target.id for e in mine})}  # fmt: skip
                figures[key] = summary(mine) | {
                    "default_constants": summary([e for e in control if e[1] == key]), "per_gpu": per_gpu,
                }  # fmt: skip
            judged = [e for e in part if e[1] in FIT_FIGURES]
            per_gpu = {gpu: summary([e for e in judged if e[0].target.id == gpu])
                       for gpu in sorted({e[0].target.id for e in judged})}  # fmt: skip
            result[generation][split] = summary(judged) | {
                "rows": len({e[0].index for e in part}), "sources": sorted({e[0].source for e in part}),
                "per_figure": figures, "per_gpu": per_gpu,
            }  # fmt: skip
            timed = [e[0] for e in part if e[1] == "ttft_ms"]
            _print_generation(generation, split, result[generation][split], part if show_rows else [], timed)
    return result


def ttft_legend(timed: list[GenerationRow]) -> str:
    """What a TTFT line of the report is judged on: how many of ``timed`` (rows with a TTFT) on the run's median,
    how many on its mean (``GenerationRow.ttft_statistic``)."""
    medians = sum(row.ttft_statistic == "median" for row in timed)
    means = len(timed) - medians
    return f"TTFT judged on the run's median where the source prints one: {medians} rows; else its mean: {means} rows"


def _print_generation(generation: str, split: str, found: dict[str, Any], part: list, timed: list) -> None:
    print(f"\n{generation} {split}: {found['rows']} rows from {len(found['sources'])} source(s)")
    for key, s in found["per_figure"].items():
        d = s["default_constants"]
        print(f"  {key:20} {s['figures']:3} figures  median {s['median_abs_error']:6.1%}  within 25%"
              f" {s['share_within_25pct']:4.0%}   (default constants: median {d['median_abs_error']:6.1%},"
              f" within 25% {d['share_within_25pct']:4.0%})")  # fmt: skip
        if key == "ttft_ms":
            print(f"    ({ttft_legend(timed)})")
        for gpu, g in s["per_gpu"].items():
            print(f"    {gpu:16} {g['figures']:3}  median {g['median_abs_error']:6.1%}"
                  f"  within 25% {g['share_within_25pct']:4.0%}")  # fmt: skip
    for row, key, p, m in part:
        key = f"ttft_ms ({row.ttft_statistic})" if key == "ttft_ms" else key
        print(f"    #{row.index:3} {row.label:50} {key:20} predicted {p:9.1f}  measured {m:9.1f}  {p / m - 1:+6.0%}"
              f"  {row.priced_as}")  # fmt: skip


LONE_USERS = 1
"""The concurrency of the rows the front end is fitted on: a lone request, no queue ahead of it."""
FRONT_END_GRID_S = [step * 1e-4 for step in range(10_001)]
"""Front-end times tried (0 to 1 s in 0.1 ms steps)."""


def lone_fit_rows(rows: list[GenerationRow], generation: str) -> list[GenerationRow]:
    """``generation``'s rows of its `fit` sources at one user with a measured TTFT: what its front end is fitted on
    (``fit_front_end``); the held-out sources never."""
    return [
        row for row in rows
        if row.generation == generation and row.split == "fit" and row.case.concurrency == LONE_USERS
        and "ttft_ms" in row.measured
    ]  # fmt: skip


def ttft_without_front_end_ms(row: GenerationRow) -> float:
    """``row``'s TTFT (ms) as shipped and judged (its run's median where the source prints one, else its mean:
    ``GenerationRow.judged``), less its generation's shipped front end: a lone request's closed-form TTFT is its
    prefill, half a decode step and the front end."""
    return row.predict(None)["ttft_ms"] - front_end(row.generation).seconds * 1e3


def fit_front_end(rows: list[GenerationRow], generation: str) -> float | None:
    """The front-end time (seconds, 3 significant figures) minimising the mean |log(predicted / measured)| of the
    judged TTFT (median where printed, else mean) over ``generation``'s lone fit rows (``lone_fit_rows``), its step
    constants as shipped; None without such rows. A diagnostic, not shipped: the fit takes in whatever the steps
    misprice in those rows' TTFT."""
    lone = lone_fit_rows(rows, generation)
    if not lone:
        return None
    pairs = [(ttft_without_front_end_ms(row), row.judged["ttft_ms"]) for row in lone]

    def cost(seconds: float) -> float:
        return statistics.fmean(abs(math.log((base + seconds * 1e3) / measured)) for base, measured in pairs)

    return float(f"{min(FRONT_END_GRID_S, key=cost):.3g}")


def main_front_end(rows: list[GenerationRow]) -> None:
    """``--front-end``: a diagnostic: what a front end fitted on each generation's lone fit rows would be, beside
    the cited one shipped (``core.engine.front_end``), and each row's TTFT without a front end against its
    measurement (what such a fit would take in)."""
    for generation in sorted({row.generation for row in rows}):
        fitted = fit_front_end(rows, generation)
        shipped = front_end(generation)
        if fitted is None:
            print(
                f"{generation}: no one-user fit row with a TTFT; shipped {shipped.seconds * 1e3:g} ms ({shipped.source})"
            )
            continue
        lone = lone_fit_rows(rows, generation)
        print(f"{generation}: a fit on its {len(lone)} one-user fit rows would give {fitted * 1e3:g} ms (not shipped);"
              f" shipped {shipped.seconds * 1e3:g} ms ({shipped.source})")  # fmt: skip
        for row in lone:
            base, measured = ttft_without_front_end_ms(row), row.judged["ttft_ms"]
            print(f"    #{row.index:3} {row.label:50} TTFT measured ({row.ttft_statistic}) {measured:8.1f} ms,"
                  f" steps alone {base:8.1f} ms,"
                  f" gap {measured - base:8.1f} ms")  # fmt: skip


def main_2025(args: argparse.Namespace) -> None:
    """``--set 2025``: fit (or check) the per-generation constants; ``--write`` stores them (``GENERATIONS_FILE``);
    ``--write`` without ``--fit`` records the shipped constants' errors again (after a change outside the constants,
    such as a generation's front end), the constants kept."""
    rows = load_generation_rows(by_release=not args.newest_rules)
    print_releases(rows)
    if args.generation:
        if args.generation not in {row.generation for row in rows if row.split == "fit"}:
            raise SystemExit(f"--generation {args.generation}: no fit rows of that generation")
        if not args.fit:
            raise SystemExit("--generation needs --fit")
    if args.front_end:
        main_front_end(rows)
        return
    default = json.loads(PRIORS_FILE.read_text())["constants"]
    if args.fit:
        chosen = [row for row in rows if args.generation in (None, row.generation)]
        generations = fit_generations(chosen, default)
        if args.generation:  # only this generation refitted; the others keep their shipped constants
            shipped = json.loads(GENERATIONS_FILE.read_text())["generations"]
            generations = shipped | {args.generation: generations[args.generation]}
        for generation, entry in generations.items():
            print(f"{generation}:", json.dumps(entry["constants"]))
            for vendor, family in entry.get("vendors", {}).items():
                print(f"  {vendor}:", json.dumps(family["constants"]))
    else:
        generations = json.loads(GENERATIONS_FILE.read_text())["generations"]
        if args.prefill:
            refit_prefill_launch(rows, generations)
            for generation, entry in generations.items():
                found = {"": entry["constants"]} | {
                    f" {v}": f["constants"] for v, f in entry.get("vendors", {}).items()
                }
                for vendor, constants in found.items():
                    if "prefill_dispatch_overhead_s" in constants:
                        print(f"{generation}{vendor}: prefill_dispatch_overhead_s"
                              f" {constants['prefill_dispatch_overhead_s']:.4g} s")  # fmt: skip
    result = generation_report(rows, generations, default, show_rows=args.rows)
    if args.write:
        for generation, entry in generations.items():
            entry["fit"] = {k: v for k, v in result[generation]["fit"].items() if k not in ("per_figure", "per_gpu")}
            entry["holdout"] = result[generation].get("holdout", {"figures": 0})
            entry["figures"] = measured_figures(rows, generation)
            for vendor, family in entry.get("vendors", {}).items():
                family["figures"] = measured_figures(rows, generation, vendor)
        data = {
            "fitted_on": "tests/fixtures/serving_benchmarks_2025.yaml: each generation's `fit` sources (fitted_on),"
            " reported on its `holdout` sources (held_out), from the default constants of cost_priors.json;"
            " outputs/serving/priors_2025.md",
            "generations": generations,
        }
        GENERATIONS_FILE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {GENERATIONS_FILE.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit the constants on the fit rows")
    parser.add_argument(
        "--write",
        action="store_true",
        help="write the refitted constants (cost_priors.json; with --set 2025, cost_priors_generations.json; with"
        " --set 2025 and no --fit, the shipped constants' errors only)",
    )
    parser.add_argument("--rows", action="store_true", help="print every figure")
    parser.add_argument(
        "--front-end",
        action="store_true",
        help="with --set 2025, a diagnostic: what a front end fitted on each generation's one-user fit rows would be"
        " (not shipped: core.engine.front_end cites measurements)",
    )
    parser.add_argument(
        "--prefill",
        action="store_true",
        help="with --set 2025 and no --fit: fit only each graphless-prefill generation's launch time per prefill"
        " kernel on its fit rows' TTFT, the shipped step constants kept (core.engine.prefill_graphs)",
    )
    parser.add_argument(
        "--generation",
        help="with --set 2025 --fit: refit this generation only (its fit rows), the others' shipped constants kept",
    )
    parser.add_argument(
        "--newest-rules",
        action="store_true",
        help="with --set 2025: price every row by its generation's newest rules read, not the release it names (how"
        " rows were priced before they passed their release)",
    )
    parser.add_argument(
        "--set",
        choices=("2023", "2025"),
        default="2023",
        help="2023: the default constants on serving_benchmarks.yaml; 2025: per engine generation",
    )
    args = parser.parse_args()
    if args.set == "2025":
        main_2025(args)
        return
    rows = load_rows()
    constants = None
    if args.fit:
        fitted = fit([r for r in rows if r.split == "fit"], START)
        constants = {k: float(f"{v:.4g}") for k, v in fitted.items()}  # what the file keeps, and what is reported
        print("fitted:", json.dumps({k: float(f"{v:.4g}") for k, v in constants.items()}, indent=1))
    result = report(rows, constants, show_rows=args.rows)
    if args.write and constants is not None:
        data = {
            "constants": constants,
            "start": START,
            "sources": "benchmarks/cost_priors_sources.md (each start value's public measurement)",
            "fitted_on": "tests/fixtures/serving_benchmarks.yaml rows with mha.split == fit: "
            + str(result["fit_rows"]),
            "fit": {k: v for k, v in result["fit"].items() if k != "per_gpu"},
            "holdout": result["holdout"],
        }
        PRIORS_FILE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {PRIORS_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
