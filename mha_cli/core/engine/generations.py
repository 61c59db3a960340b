"""Engine generations: which release of a serving engine priced a figure, and the memory rules that differ by it.

``--engine vllm`` means the latest generation modelled; ``vllm@0.10``, ``vllm==0.11.0``, ``sglang@0.4.6`` or a
generation's id (``vllm-v0``) pick one by version. A version outside every range is refused. Each generation
lists, as data, the rules that set it apart from its neighbours; every rule names the source it was read in:

- ``vllm-v0`` (0.1-0.7, the V0 engine by default): ``worker/worker.py`` ``determine_num_available_blocks``
  sizes the pool as total x gpu_memory_utilization - the profiling peak (weights, activations, non-torch
  memory), as V1 does; its block manager gives every layer the same blocks (no hybrid allocator: a sliding
  layer holds as many tokens as a full one), CUDA graphs are captured after the pool, and its step default
  (``config.py`` ``SchedulerConfig.__post_init__``, 0.6-0.7) is max(max_model_len, 2048) tokens without chunked
  prefill (the default up to 32K tokens of context, ``engine/arg_utils.py``), 2048 with it, 256 sequences; dated
  by release in ``core.engine.settings._vllm_v0_step_defaults`` (chunked prefill above 32K from 0.5.3 only);
- ``vllm-v1`` (0.8-0.20): ``v1/worker/gpu_worker.py`` ``determine_available_memory``: total x utilisation -
  weights - activation peak - non-torch; CUDA graphs come out of the (1 - utilisation) headroom;
- ``vllm-0.21`` (0.21 and later): the same, less the CUDA-graph memory estimated before the pool
  (``gpu_model_runner.py`` ``profile_cudagraph_memory``, applied while ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``
  is on, its default since 0.21; read in the installed vLLM 0.32's ``determine_available_memory``); none where Model
  Runner V2 profiles the model before 0.29, whose ``profile_cudagraph_memory`` returns 0
  (``core.engine.model_runner.estimates_cuda_graphs``). 0.32 counts the
  rest as the free memory consumed since start-up plus the profiling run's transient peak (``utils/mem_utils.py``
  ``memory_profiling``): the same weights, activation and non-torch lines, measured another way, so kept. The
  estimate itself is measured at start-up (first capture plus one graph's increment per further graph): priced
  from the capture sizes, graph counts and largest batch's buffers vLLM's source sets (``core.engine.cuda_graphs``);
- ``sglang-0.4``: ``server_args.py`` ``__post_init__`` (0.4.x): mem_fraction_static 0.88 at tp 1, 0.87 at tp 2,
  0.85 at 4, 0.81 at 8, 0.79 at 16 or more, whatever the GPU; chunked prefill 2048 and CUDA-graph batch 8 on a
  GPU under 25,000 MiB, else 8192 and 160. The pool rule (``model_runner.profile_max_num_token``) is 0.5's;
- ``sglang-0.5`` (0.5 and later): the fraction from the GPU's size and a reserve (``_handle_gpu_memory_settings``,
  0.5.3), ``core.engine.settings.sglang_default_fraction``;
- ``trtllm-cpp`` (0.5-0.21, the C++ runtime over a ``trtllm-build`` engine): ``KVCacheManager::calculateMaxNumBlocks``
  takes free_gpu_memory_fraction (``KvCacheConfig::kDefaultGpuMemFraction`` 0.9; 0.85 in the first releases, not
  modelled) of the memory free once the engine (weights and its activation buffers) is loaded; blocks of
  ``tokens_per_block`` 64 (``trtllm-build``'s default);
- ``trtllm-pytorch`` (1.0 and later): the PyTorch backend's ``KvCacheCreator``, the same fraction of what is free
  after a profiling step, in blocks of 32 tokens. Releases 0.17-0.21 ran it on request (``--backend pytorch``): a
  version picks the C++ engine there, ``--engine trtllm-pytorch`` names the backend.
Pure Python; no rule here is fitted on the held-out start-up logs (``tests/fixtures/engine_logs.yaml``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from mha_cli.core.engine.images import engine_of_image
from mha_cli.core.engine.releases_read import ENGINE_NAMES, NEWEST_READ, VLLM_MEMORY_RULES_READ
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import EngineName, GenerationId
from mha_cli.core.suggest import did_you_mean

Version = tuple[int, int]
"""(major, minor) of a release: 0.10.2 is (0, 10)."""

ENGINE_ALIASES: dict[str, EngineName] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "trtllm": "trtllm",
    "trt-llm": "trtllm",
    "tensorrt-llm": "trtllm",
    "tensorrt_llm": "trtllm",
}


class Generation(NamedTuple):
    """One generation of an engine: the releases it covers and the memory rules that differ from its neighbours'."""

    id: GenerationId
    engine: EngineName
    first: Version
    """The first release covered (inclusive)."""
    until: Version | None
    """The first release no longer covered; None: every later release (the latest generation)."""
    label: str
    """How a person names it: ``vLLM V1 (0.8-0.20)``."""
    cuda_graph_in_budget: bool
    """The CUDA-graph memory is estimated before the pool and taken from its budget (vLLM >= 0.21)."""
    hybrid_allocator: bool
    """vLLM's hybrid KV-cache manager (V1): sliding-window layers in groups holding their window; False: every layer
    holds every token in the same blocks (V0's block manager; SGLang and TensorRT-LLM are priced their own way)."""
    block_size: int
    """Tokens per KV block when none is given: vLLM's block_size on CUDA (``platforms/cuda.py``), SGLang's
    page_size, TRT-LLM's tokens_per_block (64 at ``trtllm-build``, 32 in the PyTorch backend); an MLA model's is
    the one its attention backend forces (``core.engine.mla_blocks``)."""
    data_parallel_flag: bool
    """The server takes ``--data-parallel-size`` (vLLM V1 and later): without it a replica is a server of its own."""
    differs: str
    """What sets it apart from its neighbours, in a line (``docs/supported.md``)."""
    source: str
    """Where the budget rule was read: file, function, version."""

    def covers(self, version: Version) -> bool:
        """Whether release ``version`` belongs to this generation."""
        return self.first <= version and (self.until is None or version < self.until)

    @property
    def example(self) -> str:
        """An ``--engine`` value that picks it: ``vllm@0.8`` (the engine alone for the latest)."""
        return self.engine if self.until is None else f"{self.engine}@{self.first[0]}.{self.first[1]}"

    @property
    def last(self) -> Version | None:
        """The last release covered, ``until`` less one minor (0.20 for ``vllm-v1``); None: open-ended, or ``until``
        is a major's first release (1.0)."""
        if self.until is None or not self.until[1]:
            return None
        return self.until[0], self.until[1] - 1

    @property
    def releases(self) -> str:
        """The releases covered, as a person writes them: ``0.8-0.20``, ``0.21 and later``."""
        first = f"{self.first[0]}.{self.first[1]}"
        if self.until is None:
            return f"{first} and later"
        major, minor = self.until
        last = f"{major}.{minor - 1}" if minor else f"{major - 1}.x"
        return first if last == first else f"{first}-{last}"


GENERATIONS: tuple[Generation, ...] = (
    Generation(
        id="vllm-v0", engine="vllm", first=(0, 1), until=(0, 8), label="vLLM V0 (0.1-0.7)",
        cuda_graph_in_budget=False, hybrid_allocator=False, block_size=16, data_parallel_flag=False,
        differs="no hybrid allocator (every layer holds every token); a step of max(max_model_len, 2048) tokens"
        " without chunked prefill; 256 sequences; no --data-parallel-size",
        source="vllm/worker/worker.py Worker.determine_num_available_blocks (0.6-0.7)",
    ),
    Generation(
        id="vllm-v1", engine="vllm", first=(0, 8), until=(0, 21), label="vLLM V1 (0.8-0.20)",
        cuda_graph_in_budget=False, hybrid_allocator=True, block_size=16, data_parallel_flag=True,
        differs="hybrid allocator; CUDA graphs captured after the pool, out of the (1 - utilisation) headroom (0.8-0.19,"
        " and the generation named without a release; vllm@0.20 estimates them before the pool, as 0.21 does)",
        source="vllm/v1/worker/gpu_worker.py Worker.determine_available_memory (0.10-0.20)",
    ),
    Generation(
        id="vllm-0.21", engine="vllm", first=(0, 21), until=None, label="vLLM 0.21 and later",
        cuda_graph_in_budget=True, hybrid_allocator=True, block_size=16, data_parallel_flag=True,
        differs="CUDA-graph memory estimated before the pool and taken from its budget; from 0.28, 16,384 tokens and"
        " 1,024 sequences a step on a GPU of 160 GiB or more",
        source="vllm/v1/worker/gpu_worker.py Worker.determine_available_memory, cudagraph_memory_estimate (0.32)",
    ),
    Generation(
        id="sglang-0.4", engine="sglang", first=(0, 4), until=(0, 5), label="SGLang 0.4",
        cuda_graph_in_budget=False, hybrid_allocator=False, block_size=1, data_parallel_flag=True,
        differs="mem_fraction_static from a reserve by the GPU's memory tier (and tp x pp under 160 GiB) from 0.4.8 (sglang@0.4:"
        " its newest, 0.4.10.post2; core.engine.sglang_tiered), by tp alone before (0.88 at tp 1 to 0.79 at 16);"
        " chunked prefill 2048 under 35 GiB, 8192 under 160 GiB, 16384 above from 0.4.8, 8192 (2048 under 25,000"
        " MiB) before",
        source="sglang/srt/server_args.py ServerArgs.__post_init__, model_runner.profile_max_num_token (0.4.x)",
    ),
    Generation(
        id="sglang-0.5", engine="sglang", first=(0, 5), until=None, label="SGLang 0.5 and later",
        cuda_graph_in_budget=False, hybrid_allocator=False, block_size=1, data_parallel_flag=True,
        differs="mem_fraction_static from the GPU's memory less a reserve for the step, CUDA graphs and tp",
        source="sglang/srt/server_args.py _handle_gpu_memory_settings, model_runner.profile_max_num_token (0.5.3)",
    ),
    Generation(
        id="trtllm-cpp", engine="trtllm", first=(0, 5), until=(1, 0), label="TensorRT-LLM C++ engine (0.5-0.x)",
        cuda_graph_in_budget=False, hybrid_allocator=False, block_size=64, data_parallel_flag=False,
        differs="blocks of 64 tokens (trtllm-build's tokens_per_block)",
        source="cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp KVCacheManager::calculateMaxNumBlocks (0.x)",
    ),
    Generation(
        id="trtllm-pytorch", engine="trtllm", first=(1, 0), until=None, label="TensorRT-LLM PyTorch backend (1.x)",
        cuda_graph_in_budget=False, hybrid_allocator=False, block_size=32, data_parallel_flag=False,
        differs="blocks of 32 tokens; the fraction of what is free after a profiling step",
        source="tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator (1.x)",
    ),
)  # fmt: skip

BY_ID: dict[str, Generation] = {generation.id: generation for generation in GENERATIONS}
LATEST: dict[EngineName, Generation] = {g.engine: g for g in GENERATIONS if g.until is None}
"""The generation ``--engine vllm`` (no version) means: the latest modelled."""

_VERSION = re.compile(r"v?(\d+)\.(\d+)", re.IGNORECASE)
"""A release's major and minor, at its start (``parse_version`` checks the whole against ``_RELEASE``)."""


def _engine(word: str, text: str) -> EngineName:
    key = word.strip().lower()
    if key in ENGINE_ALIASES:
        return ENGINE_ALIASES[key]
    known = [*ENGINE_ALIASES, *BY_ID]
    raise BadInputError(
        f"unknown engine {text!r}: {did_you_mean(key, known, otherwise='use vllm, sglang or trtllm')}"
        " (a version as vllm@0.10)"
    )


def ranges(engine: EngineName) -> str:
    """The generations of ``engine`` and their releases: ``vllm-v0 0.1-0.7, vllm-v1 0.8-0.20, ...``."""
    return ", ".join(f"{g.id} {g.releases}" for g in GENERATIONS if g.engine == engine)


def parse_version(text: str) -> Version:
    """``0.10``, ``0.10.x``, ``v0.11.0``, ``0.4.6.post1``, ``1.0.0rc4`` as (major, minor); refused when it is none of
    those (``0.10-foo`` is not priced as some release of 0.10)."""
    line = re.sub(r"\.x$", "", text.strip(), flags=re.IGNORECASE)
    if _RELEASE.fullmatch(line) is None:
        raise BadInputError(f"engine version {text!r} is not a release number: write it as 0.10 or 0.11.0")
    match = _VERSION.match(line)
    assert match is not None  # a release is major.minor first
    return int(match.group(1)), int(match.group(2))


def generation_of(engine_text: str | None) -> Generation:
    """The generation ``--engine`` names: ``vllm`` (latest), ``vllm@0.10``, ``vllm==0.11.0``, ``vllm-v0``, an image
    (``vllm/vllm-openai:v0.11.0``: ``core.engine.images``); None: the latest vLLM. An unknown engine or a version
    outside every generation is one line (BadInputError, exit 2)."""
    if engine_text is None:
        return LATEST["vllm"]
    text = engine_of_image(str(engine_text)).strip()
    if text.lower() in BY_ID:
        return BY_ID[text.lower()]
    word, separator, version_text = text.partition("@") if "@" in text else text.partition("==")
    engine = _engine(word, text)
    if not separator:
        return LATEST[engine]
    version_text = major_alone_as_release(engine, version_text)
    version = parse_version(version_text)
    for generation in GENERATIONS:
        if generation.engine == engine and generation.covers(version):
            from mha_cli.core.engine.release_series import refuse_release_past_its_series

            refuse_release_past_its_series(engine, typed_release(text) or version_text)
            return generation
    raise BadInputError(
        f"{engine} {version_text.strip().lstrip('vV')} is outside every generation modelled ({ranges(engine)}):"
        f" give a version in one of them, or --engine {engine} for the latest"
    )


_RELEASE = re.compile(r"v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+|\.\d+|rc\d+)?)", re.IGNORECASE)
_MAJOR_ALONE = re.compile(r"v?(\d+)", re.IGNORECASE)


def major_alone_as_release(engine: EngineName, version_text: str) -> str:
    """``version_text`` as a release: a major alone past the newest release read (``vllm@1``, ``trtllm@2``) is read
    as that major's first minor (``1.0``), priced as the newest read as any later release is
    (``core.engine.releases_read``); a major alone within the releases read (``vllm@0``, ``trtllm@1``) spans releases
    priced differently and is refused (BadInputError, one line), as is vLLM's ``v1`` or ``v0`` (its engines' names, not
    releases: ``vllm@v1`` read as 1.0 priced the V1 engine, 0.8-0.20, as the newest release); anything else is returned
    as it is."""
    match = _MAJOR_ALONE.fullmatch(version_text.strip())
    if match is None:
        return version_text
    major, newest = int(match.group(1)), NEWEST_READ[engine].release
    engine_named = f"{engine}-{version_text.strip().lower()}"
    if engine_named in BY_ID:  # vllm@v1: the V1 engine's generation (vllm-v1) as much as a release 1
        raise BadInputError(
            f"{engine}@{version_text.strip()} names {BY_ID[engine_named].label} as well as a release: write the"
            f" generation (--engine {engine_named}) or a release, as {engine}@{newest}"
        )
    if major > int(newest.split(".")[0]):
        return f"{major}.0"
    raise BadInputError(
        f"{ENGINE_NAMES[engine]} {version_text.strip()} names a major alone, whose releases mha prices differently:"
        f" write a minor or a release, as {engine}@{newest} (the newest read)"
    )


def typed_release(engine_text: str | None) -> str | None:
    """The release ``--engine`` names, as PyPI writes it (``vllm@v0.10.2`` -> ``0.10.2``, ``sglang==0.4.6.post1``;
    ``vllm@0.10.x`` -> ``0.10``, the release line; ``vllm@1``, a major past the newest read, -> ``1.0``); None for an
    engine alone or a generation id."""
    if engine_text is None:
        return None
    text = engine_of_image(str(engine_text)).strip()
    word, separator, version_text = text.partition("@") if "@" in text else text.partition("==")
    version_text = re.sub(r"\.x$", "", version_text.strip(), flags=re.IGNORECASE)  # 0.10.x: the 0.10 line
    engine = ENGINE_ALIASES.get(word.strip().lower())
    if separator and engine is not None:
        version_text = major_alone_as_release(engine, version_text)  # vllm@1: 1.0
    match = _RELEASE.fullmatch(version_text) if separator else None
    return None if match is None else match.group(1).lower()


def earlier_generations(generation_id: str) -> list[str]:
    """The generations of ``generation_id``'s engine released before it, nearest first; none for an id no generation
    has (the priors and front ends of a generation without its own take the nearest of these that has one)."""
    same = [
        g.id for g in GENERATIONS if g.engine == next((h.engine for h in GENERATIONS if h.id == generation_id), None)
    ]
    return list(reversed(same[: same.index(generation_id)])) if generation_id in same else []


def generation(generation_id: GenerationId | None, engine: EngineName | None = None) -> Generation:
    """The generation of that id; None: ``engine``'s latest (vLLM's without an engine)."""
    if generation_id is not None:
        return BY_ID[generation_id]
    return LATEST[engine or "vllm"]


def vllm_memory_rules_note(release: Version | None) -> str | None:
    """The plan's note when vLLM ``release`` (None: none typed) is past ``VLLM_MEMORY_RULES_READ``; else None."""
    if release is None or release <= VLLM_MEMORY_RULES_READ:
        return None
    read = ".".join(map(str, VLLM_MEMORY_RULES_READ))
    return (
        f"vLLM {'.'.join(map(str, release))} is priced with {read}'s memory rules (the newest whose memory code was"
        f" read); what changed after it is not priced (0.34 reworks the CUDA-graph capture tiers of dynamic"
        " speculation, not read)"
    )
