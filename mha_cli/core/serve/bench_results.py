"""Benchmark clients' result files read as measured runs: ``vllm bench serve --save-result`` (JSON), SGLang's
``bench_serving --output-file`` (JSON lines), genai-perf's ``profile_export_genai_perf.json`` and GuideLLM's
report (``--output-path``). Each becomes a ``MeasuredRun``: the load (closed loop of N users, or a rate), the
requests' lengths, and the figures (mean, median, p90, p99 of TTFT, TPOT, ITL, end-to-end; output tokens/s).

A file of another tool, a run missing a figure the fit needs, or a value of the wrong type is one line naming the
file and the field. The key paths each reader takes are in ``tests/fixtures/bench_results/SOURCES.md``. Pure
Python.
"""

import math
from pathlib import Path
from typing import Any, NamedTuple

from mha_cli.core.errors import BadInputError, looking_at_input, shown_path
from mha_cli.core.serve.stats import LatencyStats

MAX_RESULT_BYTES = 256 << 20
"""A result file with per-token latencies of thousands of requests is tens of MiB; larger ones are refused."""


class MeasuredRun(NamedTuple):
    """One benchmark run as its client reported it (times in milliseconds, as the clients print them)."""

    path: str
    tool: str
    model: str
    max_concurrency: int | None
    """Closed loop: users in flight at most (None: no cap)."""
    rate: float | None
    """Open loop: requests per second (None: all at once)."""
    burstiness: float
    lengths: list[tuple[int, int]]
    """(input, output) tokens per request; the means repeated when the file gives no per-request lengths."""
    lengths_per_request: bool
    send_times: list[float] | None
    """When each request was sent, in seconds from the first (replayed for an open loop), when the file has them."""
    ttft_ms: LatencyStats
    tpot_ms: LatencyStats
    itl_ms: LatencyStats | None
    e2e_ms: LatencyStats | None
    output_tokens_per_s: float
    duration_s: float | None
    backend: str | None = None
    """The client's ``backend`` setting as the file saved it (``sglang-oai``, ``vllm``, ``openai``)."""
    server: str | None = None
    """The engine that setting names (``SERVER_OF_BACKEND``): vllm, sglang or trtllm; None where it names none."""

    def describe(self) -> str:
        """``c16 1024/128`` or ``4 req/s 1024/128``: the load and the mean lengths."""
        load = f"c{self.max_concurrency}" if self.rate is None else f"{self.rate:g} req/s"
        if self.rate is not None and self.burstiness != 1:
            load += f" (burstiness {self.burstiness:g})"
        mean_in = round(sum(i for i, _ in self.lengths) / len(self.lengths))
        mean_out = round(sum(o for _, o in self.lengths) / len(self.lengths))
        return f"{load} {mean_in}/{mean_out}"


SERVER_OF_BACKEND = {
    "SGLang bench_serving": {"sglang": "sglang", "sglang-native": "sglang", "sglang-oai": "sglang",
                             "sglang-oai-chat": "sglang", "vllm": "vllm", "vllm-chat": "vllm", "trt": "trtllm"},
    "vllm bench serve": {"sglang": "sglang", "tensorrt-llm": "trtllm"},
}  # fmt: skip
"""The engine a client's ``--backend`` names, by client: SGLang's ``bench_serving`` (``sglang/benchmark/serving.py``
``ASYNC_REQUEST_FUNCS``: one request function per server); vLLM's clients before ``vllm bench serve``
(``benchmarks/benchmark_serving.py``: ``sglang``, ``tensorrt-llm``). vLLM's ``vllm`` and ``openai`` backends are one
OpenAI-completions client (0.32's ``endpoint_request_func.py``), run against any server: no engine read from them."""


def server_of(tool: str, backend: object) -> str | None:
    """The engine ``tool``'s ``backend`` setting names (``SERVER_OF_BACKEND``), or None."""
    return SERVER_OF_BACKEND.get(tool, {}).get(backend) if isinstance(backend, str) else None


def read_results(path: Path) -> list[MeasuredRun]:
    """Every run in ``path`` (one for most tools; SGLang's JSON lines and GuideLLM's report may hold several)."""
    from mha_cli.core.config_io import read_text_bounded

    where = shown_path(path)
    text = read_text_bounded(path, where, limit=MAX_RESULT_BYTES, what="a benchmark result file")
    from pydantic_core import from_json

    documents: list[Any] = []
    try:
        documents = [from_json(text)]
    except ValueError:
        try:  # JSON lines (SGLang appends one object a run)
            documents = [from_json(line) for line in text.splitlines() if line.strip()]
        except ValueError as error:
            raise BadInputError(f"{where} is neither JSON nor JSON lines ({error})") from None
    runs = []
    for index, document in enumerate(documents):
        label = where if len(documents) == 1 else f"{where} line {index + 1}"
        runs += [_checked(run) for run in _read_document(document, label)]
    if not runs:
        raise BadInputError(f"{where} holds no benchmark run")
    return runs


def _read_document(document: Any, where: str) -> list[MeasuredRun]:
    if not isinstance(document, dict):
        raise BadInputError(f"{where} is not a benchmark result object")
    if "benchmarks" in document and isinstance(document["benchmarks"], list):
        model = document.get("config", {}).get("model") if isinstance(document.get("config"), dict) else None
        runs = [_guidellm(benchmark, where, i) for i, benchmark in enumerate(document["benchmarks"])]
        return [run._replace(model=run.model or str(model or "")) for run in runs]
    if "time_to_first_token" in document and isinstance(document["time_to_first_token"], dict):
        return [_genai_perf(document, where)]
    if "mean_ttft_ms" in document:  # vLLM names its end-to-end latency e2el and keeps the model id; SGLang neither
        if "model_id" in document or "mean_e2el_ms" in document:
            return [_vllm(document, where)]
        if "mean_e2e_latency_ms" in document or "random_input_len" in document:
            return [_sglang(document, where)]
    raise BadInputError(
        f"{where} is not a result file mha reads: give vllm bench serve --save-result JSON, SGLang bench_serving"
        " --output-file, genai-perf's profile_export_genai_perf.json or a GuideLLM report"
    )


class _Fields:
    """Typed reads of one document, each failure one line naming the file and the key."""

    def __init__(self, document: dict[str, Any], where: str, tool: str) -> None:
        self.document, self.where, self.tool = document, where, tool

    def get(self, path: str, default: Any = KeyError) -> Any:
        value: Any = self.document
        for part in path.split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            elif default is KeyError:
                raise BadInputError(f"{self.where}: this {self.tool} result has no {path!r}: rerun with it saved")
            else:
                return default
        return value

    def number(self, path: str, default: Any = KeyError) -> float:
        value = self.get(path, default)
        if value is None and default is not KeyError:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise BadInputError(f"{self.where}: {path!r} is {value!r}, not a number")
        return float(value)

    def stats(self, mean: str, median: str, p90: str | None, p99: str, scale: float = 1.0) -> LatencyStats:
        """A latency's figures from four keys (``scale``: to milliseconds); p90 from the median when absent."""
        middle = self.number(median) * scale
        return LatencyStats(
            mean=self.number(mean) * scale, median=middle,
            p90=self.number(p90, middle / scale) * scale if p90 else middle, p99=self.number(p99) * scale,
        )  # fmt: skip

    def lengths(
        self, inputs: str, outputs: str, count: int, mean_in: float, mean_out: float
    ) -> tuple[list[tuple[int, int]], bool]:
        """Per-request lengths when both lists are there (and as long as ``count``), else the means repeated."""
        given_in, given_out = self.get(inputs, None), self.get(outputs, None)
        if isinstance(given_in, list) and isinstance(given_out, list) and len(given_in) == len(given_out) == count:
            try:
                pairs = [(max(1, int(i)), max(1, int(o))) for i, o in zip(given_in, given_out, strict=True)]
            except (TypeError, ValueError):
                raise BadInputError(f"{self.where}: {inputs!r} / {outputs!r} hold a non-number") from None
            return pairs, True
        if count < 1 or mean_in < 1 or mean_out < 1:
            raise BadInputError(f"{self.where}: no completed request with tokens in and out: nothing to fit on")
        return [(round(mean_in), round(mean_out))] * count, False


def _rate(value: Any, where: str) -> float | None:
    """``inf`` (a closed loop's "all at once") as None; a finite rate as requests per second; anything else one line
    naming the file."""
    if value is None or value == "inf" or (isinstance(value, float) and math.isinf(value)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise BadInputError(f"{where}: its request rate is {value!r}: requests per second, or inf") from None


def _concurrency(value: Any, where: str) -> int | None:
    """The run's concurrency cap as a whole number (None: no cap); anything else one line naming the file."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadInputError(f"{where}: its max concurrency is {value!r}: a whole number of users") from None


def _checked(run: MeasuredRun) -> MeasuredRun:
    """``run``, refused in one line naming its file where a figure is one no client writes: a negative latency or
    throughput, a run of no duration, a concurrency cap or a rate that is not above 0."""
    figures = {"TTFT": run.ttft_ms, "TPOT": run.tpot_ms, "ITL": run.itl_ms, "end-to-end latency": run.e2e_ms}
    for name, stats in figures.items():
        for statistic, value in ({} if stats is None else stats.model_dump()).items():
            if value < 0:
                raise BadInputError(f"{run.path}: its {statistic} {name} is {value:g} ms: a latency is never negative")
    problems = [
        (run.output_tokens_per_s < 0, f"output tokens/s is {run.output_tokens_per_s:g}: never negative"),
        (run.duration_s is not None and run.duration_s <= 0, f"duration is {run.duration_s} s: a run lasts some time"),
        (run.max_concurrency is not None and run.max_concurrency < 1,
         f"max concurrency is {run.max_concurrency}: at least 1 user (or none, no cap)"),
        (run.rate is not None and run.rate <= 0, f"request rate is {run.rate}: above 0 requests per second, or inf"),
    ]  # fmt: skip
    for failed, what in problems:
        if failed:
            raise BadInputError(f"{run.path}: its {what}")
    return run


def _vllm(document: dict[str, Any], where: str) -> MeasuredRun:
    """``vllm bench serve --save-result`` (``vllm/benchmarks/serve.py``): per-request lists with --save-detailed."""
    f = _Fields(document, where, "vllm bench serve")
    completed = int(f.number("completed"))
    lengths, exact = f.lengths(
        "input_lens", "output_lens", completed, f.number("total_input_tokens") / max(1, completed),
        f.number("total_output_tokens") / max(1, completed),
    )  # fmt: skip
    starts = f.get("start_times", None)
    send_times = None
    if isinstance(starts, list) and len(starts) == completed and all(isinstance(t, int | float) for t in starts):
        first = min(starts)
        send_times = [float(t) - first for t in starts]
    return MeasuredRun(
        path=where, tool="vllm bench serve", model=str(f.get("model_id")),
        max_concurrency=_concurrency(f.get("max_concurrency", None), where),
        rate=_rate(f.get("request_rate", None), where),
        burstiness=f.number("burstiness", 1.0), lengths=lengths, lengths_per_request=exact, send_times=send_times,
        ttft_ms=f.stats("mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms"),
        tpot_ms=f.stats("mean_tpot_ms", "median_tpot_ms", "p90_tpot_ms", "p99_tpot_ms"),
        itl_ms=f.stats("mean_itl_ms", "median_itl_ms", "p90_itl_ms", "p99_itl_ms") if "p99_itl_ms" in document
        else None,
        e2e_ms=f.stats("mean_e2el_ms", "median_e2el_ms", "p90_e2el_ms", "p99_e2el_ms") if "p99_e2el_ms" in document
        else None,
        output_tokens_per_s=f.number("output_throughput"), duration_s=f.number("duration", None),
        backend=_text(f.get("backend", None)), server=server_of("vllm bench serve", f.get("backend", None)),
    )  # fmt: skip


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _sglang(document: dict[str, Any], where: str) -> MeasuredRun:
    """SGLang ``bench_serving --output-file`` (``sglang/benchmark/serving.py``, one JSON object a line; per-request
    lengths with ``--output-details``). No burstiness (Poisson arrivals); the model only from an SGLang server's
    ``server_info``."""
    f = _Fields(document, where, "SGLang bench_serving")
    completed = int(f.number("completed"))
    lengths, exact = f.lengths(
        "input_lens", "output_lens", completed, f.number("total_input_tokens") / max(1, completed),
        f.number("total_output_tokens") / max(1, completed),
    )  # fmt: skip
    rate = f.get("request_rate", None)
    if rate == "trace":
        raise BadInputError(f"{where}: a trace replay's arrivals are not in the result: give a rate or concurrency run")
    return MeasuredRun(
        path=where, tool="SGLang bench_serving", model=str(f.get("server_info.model_path", "") or ""),
        max_concurrency=_concurrency(f.get("max_concurrency", None), where), rate=_rate(rate, where), burstiness=1.0,
        lengths=lengths, lengths_per_request=exact, send_times=None,
        ttft_ms=f.stats("mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms"),
        tpot_ms=f.stats("mean_tpot_ms", "median_tpot_ms", "p90_tpot_ms", "p99_tpot_ms"),
        itl_ms=f.stats("mean_itl_ms", "median_itl_ms", "p90_itl_ms", "p99_itl_ms") if "p99_itl_ms" in document
        else None,
        e2e_ms=f.stats("mean_e2e_latency_ms", "median_e2e_latency_ms", "p90_e2e_latency_ms", "p99_e2e_latency_ms")
        if "p99_e2e_latency_ms" in document else None,
        output_tokens_per_s=f.number("output_throughput"), duration_s=f.number("duration", None),
        backend=_text(f.get("backend", None)), server=server_of("SGLang bench_serving", f.get("backend", None)),
    )  # fmt: skip


def _genai_perf(document: dict[str, Any], where: str) -> MeasuredRun:
    """genai-perf's ``profile_export_genai_perf.json`` (``genai_perf/export_data/json_exporter.py``): each metric
    ``{unit, avg, p50, p90, p99, ...}`` in ms; its ``inter_token_latency`` is vLLM's TPOT; the load and the model in
    ``input_config`` (``perf_analyzer.stimulus`` from 0.0.13, flat before)."""
    f = _Fields(document, where, "genai-perf")
    for metric in ("time_to_first_token", "inter_token_latency", "request_latency"):
        unit = f.get(f"{metric}.unit", "ms")
        if unit != "ms":
            raise BadInputError(f"{where}: {metric} is in {unit!r}: mha reads genai-perf's JSON export (ms)")
    count = int(f.number("request_count.avg"))
    lengths, _ = f.lengths(
        "-", "-", count, f.number("input_sequence_length.avg"), f.number("output_sequence_length.avg")
    )  # fmt: skip
    concurrency = f.get("input_config.perf_analyzer.stimulus.concurrency", None)
    rate = f.get("input_config.perf_analyzer.stimulus.request_rate", None)
    if concurrency is None and rate is None:
        concurrency, rate = f.get("input_config.concurrency", None), f.get("input_config.request_rate", None)
    if concurrency is None and rate is None:
        raise BadInputError(f"{where}: its input_config names neither a concurrency nor a request rate")
    models = f.get("input_config.model_names", None) or [f.get("input_config.model", "")]
    return MeasuredRun(
        path=where, tool="genai-perf", model=str(models[0]), max_concurrency=_concurrency(concurrency, where),
        rate=_rate(rate, where), burstiness=1.0, lengths=lengths, lengths_per_request=False, send_times=None,
        ttft_ms=f.stats("time_to_first_token.avg", "time_to_first_token.p50", "time_to_first_token.p90",
                        "time_to_first_token.p99"),
        tpot_ms=f.stats("inter_token_latency.avg", "inter_token_latency.p50", "inter_token_latency.p90",
                        "inter_token_latency.p99"),
        itl_ms=None,
        e2e_ms=f.stats("request_latency.avg", "request_latency.p50", "request_latency.p90", "request_latency.p99"),
        output_tokens_per_s=f.number("output_token_throughput.avg"),
        duration_s=count / f.number("request_throughput.avg") if f.number("request_throughput.avg", 0.0) else None,
    )  # fmt: skip


def _guidellm(benchmark: Any, where: str, index: int) -> MeasuredRun:
    """One benchmark of a GuideLLM report (``guidellm/benchmark/schemas``): summaries of the successful requests;
    its ``inter_token_latency_ms`` is vLLM's TPOT; ``request_latency`` in seconds; the strategy in ``config``
    (``args`` in old reports). Synchronous and throughput strategies are a closed loop of 1 and an unbounded one."""
    label = f"{where} benchmark {index}"
    if not isinstance(benchmark, dict):
        raise BadInputError(f"{label} is not a benchmark object")
    f = _Fields(benchmark, label, "GuideLLM")
    strategy = f.get("config.strategy", None) or f.get("args.strategy", None) or {}
    kind = strategy.get("type_") if isinstance(strategy, dict) else None
    concurrency, rate = None, None
    if kind == "concurrent":
        concurrency = int(strategy.get("streams", 0)) or None
    elif kind == "synchronous":
        concurrency = 1
    elif kind in ("constant", "poisson"):
        rate = float(strategy.get("rate", 0)) or None
    elif kind != "throughput":
        raise BadInputError(f"{label}: strategy {kind!r} is not one mha replays (concurrent, synchronous, constant,"
                            " poisson, throughput)")  # fmt: skip
    count = int(f.number("metrics.request_totals.successful"))
    lengths, _ = f.lengths(
        "-", "-", count, f.number("metrics.prompt_token_count.successful.mean"),
        f.number("metrics.output_token_count.successful.mean"),
    )  # fmt: skip

    def summary(metric: str, scale: float = 1.0) -> LatencyStats:
        base = f"metrics.{metric}.successful"
        return f.stats(f"{base}.mean", f"{base}.median", f"{base}.percentiles.p90", f"{base}.percentiles.p99", scale)

    model = f.get("config.backend.model", "") or ""
    return MeasuredRun(
        path=label, tool="GuideLLM", model=str(model), max_concurrency=concurrency, rate=rate, burstiness=1.0,
        lengths=lengths, lengths_per_request=False, send_times=None, ttft_ms=summary("time_to_first_token_ms"),
        tpot_ms=summary("inter_token_latency_ms"), itl_ms=None, e2e_ms=summary("request_latency", 1e3),
        output_tokens_per_s=f.number("metrics.output_tokens_per_second.successful.mean"),
        duration_s=f.number("duration", None),
    )  # fmt: skip


def collect(paths: list[Path]) -> list[MeasuredRun]:
    """The runs of every file, a folder standing for its ``*.json`` and ``*.jsonl`` files (sorted) and a quoted
    pattern (``'results/tiny-llama_*.json'``) for the files it matches."""
    runs: list[MeasuredRun] = []
    for path in paths:
        with looking_at_input(path):  # a name the system refuses to look at (too long): one line, not a traceback
            pattern = not path.exists() and any(mark in str(path) for mark in "*?[")
            folder = not pattern and path.is_dir()
        if pattern:
            matches = sorted(path.parent.glob(path.name))
            if not matches:
                raise BadInputError(f"{shown_path(path)} matches no file")
            runs += collect(matches)
        elif folder:
            files = sorted([*path.glob("*.json"), *path.glob("*.jsonl")])
            files = [file for file in files if file.name != "manifest.json"]
            if not files:
                raise BadInputError(f"{shown_path(path)} holds no *.json or *.jsonl result file")
            for file in files:
                runs += read_results(file)
        else:
            runs += read_results(path)
    return runs
