"""A launch line in the form an engine release takes (``core.engine.flags`` says which release has which word).

The launch lines are written in the newest form; ``fit_line`` rewrites one for the release meant:

- an older form where the release has one (``_older_form``): vLLM's ``--all2all-backend X`` as the variable
  ``VLLM_ALL2ALL_BACKEND=X`` (0.9.1 to 0.11.0), SGLang's ``--moe-a2a-backend deepep`` as ``--enable-deepep-moe``
  (0.4.4.post2 to 0.4.10.post1), SGLang's ``--dp-size 1 --attn-dp-size N`` as ``--dp-size N --enable-dp-attention``
  (before 0.5.22, which deprecates the latter), ``vllm serve MODEL`` as ``python -m vllm.entrypoints.openai.api_server --model
  MODEL`` (before 0.5.2), vLLM's JSON ``--limit-mm-per-prompt`` as ``image=N,video=M`` (before 0.8.5);
- a word a later release deprecates, in the name it asks for instead (``_renamed``): vLLM's ``--quantization fp8``
  (online fp8) as ``--quantization fp8_per_tensor`` from 0.31.0;
- a word an older release needs beside one it has (``_companions``): SGLang's ``--enable-ep-moe`` beside
  ``--ep-size`` before ``SGLANG_EP_SIZE_ALONE``, whose MoE layers run expert-parallel only under it;
- a flag set to the engine's default that the release lacks is left out (``--pp-size 1`` before SGLang had
  pipeline parallelism; vLLM's ``--no-async-scheduling`` before 0.10.0, which schedules one step at a time);
- anything else the release lacks leaves no line: ``Fitted.words`` is None and ``Fitted.note`` says which word,
  from which release, so the line never asks a release for what it cannot do.

Pure Python.
"""

from __future__ import annotations

import json
import shlex
from typing import NamedTuple

from mha_cli.core.engine.flags import (
    LATEST,
    Release,
    describe,
    format_release,
    has,
    line_span,
    line_words,
    release_key,
    release_meant,
    span,
)
from mha_cli.core.engine.generations import Generation
from mha_cli.core.engine.release_numbers import ENGINE_NAMES as ENGINE_NAMES

DEFAULTS: dict[str, dict[str, str]] = {
    "vllm": {"--pipeline-parallel-size": "1", "--data-parallel-size": "1"},
    "sglang": {"--pp-size": "1", "--dp-size": "1"},
}
"""Flags whose value here is the engine's own default: a release without the flag runs the same without it."""

SGLANG_EP_SIZE_ALONE = "0.4.10.post2"
"""The first SGLang release whose MoE layer follows ``--ep-size`` alone: its ``layers/moe/ep_moe/layer.py``
``get_moe_impl_class`` returns EPMoE when ``get_moe_expert_parallel_world_size() > 1``. 0.4.0.post1 to 0.4.10.post1
pick EPMoE only under ``enable_ep_moe`` (``EPMoE if global_server_args_dict["enable_ep_moe"] else FusedMoE`` in the
models, ``get_moe_impl_class`` from 0.4.9), whose ``ServerArgs.__post_init__`` sets ``ep_size = tp_size``; nothing
else reads ``ep_size`` there, so ``--ep-size`` alone runs the experts tensor-parallel. Read in the wheels of
0.4.0.post1, 0.4.3, 0.4.6, 0.4.9, 0.4.9.post3, 0.4.10, 0.4.10.post1 and 0.4.10.post2
(``outputs/engine_flags/first_reads.json``: ``benchmarks/engine_flag_sources.py``)."""

LATEST_RELEASE: Release = (LATEST, 0, 0, 0)
"""Past every release number: a line for an engine's latest release."""


class Fitted(NamedTuple):
    """One line fitted to a release: its words (None: the release cannot run what was priced) and why not."""

    words: list[str] | None
    note: str | None = None


def _value_after(words: list[str], flag: str) -> str | None:
    at = words.index(flag)
    following = words[at + 1] if at + 1 < len(words) else None
    return None if following is None or following.startswith("--") else following


def _without(words: list[str], flag: str, takes_value: bool) -> list[str]:
    at = words.index(flag)
    return [*words[:at], *words[at + 1 + int(takes_value) :]]


def _dp_attention_older_form(words: list[str]) -> list[str]:
    """SGLang's ``--attn-dp-size N`` (0.5.22 on) in the form before it: ``--dp-size N --enable-dp-attention``
    (``parallel_hook.handle_deprecated_dp_attention`` reads the one as the other)."""
    at = words.index("--attn-dp-size")
    ranks = words[at + 1]
    older = [*words[:at], "--enable-dp-attention", *words[at + 2 :]]
    if "--dp-size" not in older:
        return [*older[:at], "--dp-size", ranks, *older[at:]]
    size = older.index("--dp-size") + 1
    return [*older[:size], ranks, *older[size + 1 :]]


def _older_form(engine: str, release: Release, words: list[str], word: str) -> list[str] | None:
    """``words`` with ``word`` (which ``release`` lacks) in the release's older form, or None when it has none."""
    if engine == "vllm" and word in ("--all2all-backend", "--all2all-backend deepep_low_latency"):
        value = _value_after(words, "--all2all-backend") or ""
        variable = f"VLLM_ALL2ALL_BACKEND={value}"
        if has(engine, release, "VLLM_ALL2ALL_BACKEND") and has(engine, release, f"VLLM_ALL2ALL_BACKEND {value}"):
            return [variable, *_without(words, "--all2all-backend", True)]
    deepep = engine == "sglang" and word in ("--moe-a2a-backend", "--moe-a2a-backend deepep")
    if deepep and _value_after(words, word.split()[0]) == "deepep" and has(engine, release, "--enable-deepep-moe"):
        at = words.index("--moe-a2a-backend")
        return [*words[:at], "--enable-deepep-moe", *words[at + 2 :]]
    if engine == "sglang" and word == "--attn-dp-size" and has(engine, release, "--enable-dp-attention"):
        return _dp_attention_older_form(words)
    if engine == "vllm" and word == "vllm serve":
        api_server = "python -m vllm.entrypoints.openai.api_server"
        if has(engine, release, api_server) and has(engine, release, "--model"):
            at = words.index("serve")
            return [*words[: at - 1], *api_server.split(), "--model", *words[at + 1 :]]
    if engine == "vllm" and word == "--limit-mm-per-prompt json" and has(engine, release, "--limit-mm-per-prompt"):
        at = words.index("--limit-mm-per-prompt")  # the older key=value form: image=2,video=0
        limits = ",".join(f"{key}={count}" for key, count in json.loads(words[at + 1]).items())
        return [*words[: at + 1], limits, *words[at + 2 :]]
    if engine == "vllm" and word == "--no-async-scheduling":  # before 0.10.0 vLLM schedules one step at a time
        return _without(words, word, False)
    default = DEFAULTS.get(engine, {}).get(word)
    if default is not None and _value_after(words, word) == default:
        return _without(words, word, True)
    return None


def _needs_ep_moe(engine: str, words: list[str]) -> bool:
    """Whether SGLang server ``words`` ask for expert parallelism by ``--ep-size N`` (N > 1) alone, which releases
    before ``SGLANG_EP_SIZE_ALONE`` run only beside ``--enable-ep-moe`` (or DeepEP's flag): trial 307 #6."""
    if engine != "sglang" or "--ep-size" not in words or "--enable-deepep-moe" in words or "--enable-ep-moe" in words:
        return False
    return _value_after(words, "--ep-size") not in (None, "1")


SGLANG_DEEPEP_AUTO_REFUSED = ("0.4.4.post4", "0.4.9")
"""SGLang releases (from, before) whose ``ServerArgs.__post_init__`` asserts "DeepEP MoE `auto` mode is not supported
with DP Attention." at start-up: read in the 0.4.4.post4 to 0.4.8 wheels' ``server_args.py`` (``--deepep-mode`` is
first in 0.4.4.post4, its default auto), gone from 0.4.9's."""


def _deepep_auto_asked(engine: str, words: list[str]) -> bool:
    """Whether SGLang server ``words`` ask DeepEP (0.4's word) with DP attention in its default auto mode."""
    deepep = "--enable-deepep-moe" in words and "--deepep-mode" not in words
    return engine == "sglang" and deepep and "--enable-dp-attention" in words


def _deepep_auto_refused(engine: str, release: Release, words: list[str]) -> str | None:
    """Why SGLang ``release`` stops on ``words``' DeepEP with DP attention in the default auto mode (trial 368 #1: the
    aggregated line, priced with both kernels, set no ``--deepep-mode``); None where it starts."""
    first, before = (release_key(r) for r in SGLANG_DEEPEP_AUTO_REFUSED)
    if not _deepep_auto_asked(engine, words) or not first <= release < before:
        return None
    return (
        f"no sglang line: SGLang {format_release(release)} stops at start-up on DeepEP's default auto mode with DP"
        " attention ('DeepEP MoE `auto` mode is not supported with DP Attention.', 0.4.4.post4-0.4.8 server_args.py),"
        " and its normal or low_latency mode alone is not what was priced: 0.4.9 or later runs the line"
    )


def _companions(engine: str, release: Release, words: list[str]) -> Fitted:
    """``words`` with what ``release`` needs beside a word it has: SGLang before ``SGLANG_EP_SIZE_ALONE`` takes
    ``--ep-size N`` (N > 1) as expert parallelism only with ``--enable-ep-moe``, which sets the size to
    ``--tp-size`` (a line whose sizes differ cannot be run there); DeepEP's ``--enable-deepep-moe`` sets it itself
    (0.4.x ``ServerArgs.__post_init__``) and picks DeepEPMoE before EPMoE. A release that stops on what the line
    asks (``_deepep_auto_refused``) runs no line."""
    refused = _deepep_auto_refused(engine, release, words)
    if refused is not None:
        return Fitted(None, refused)
    if not _needs_ep_moe(engine, words) or release >= release_key(SGLANG_EP_SIZE_ALONE):
        return Fitted(words)
    experts = _value_after(words, "--ep-size")
    name = f"SGLang {format_release(release)}"
    if "--tp-size" not in words or _value_after(words, "--tp-size") != experts:
        why = f"its --enable-ep-moe sets the expert ranks to --tp-size; --ep-size alone from {SGLANG_EP_SIZE_ALONE}"
        return Fitted(None, f"no sglang line: {name} runs --ep-size {experts} only as --tp-size ({why})")
    at = words.index("--ep-size") + 2
    return Fitted([*words[:at], "--enable-ep-moe", *words[at:]])


VLLM_FP8_RENAMED = "0.31.0"
"""The first vLLM release that deprecates ``--quantization fp8`` for online quantisation ("--quantization fp8 is
deprecated for online quantization; use --quantization fp8_per_tensor instead", ``model_loader/weight_utils.py`` in
the 0.31.0-0.34.0 wheels, absent from 0.30.0's); ``fp8_per_tensor`` is the same online fp8, a scale per tensor, named
from 0.20.0 (trial 368 #4)."""


def _renamed(engine: str, release: Release, words: list[str]) -> list[str]:
    """``words`` with a word ``release`` deprecates in the name it asks for instead (``VLLM_FP8_RENAMED``)."""
    if engine != "vllm" or release < release_key(VLLM_FP8_RENAMED) or "--quantization" not in words:
        return words
    at = words.index("--quantization")
    return (
        [*words[: at + 1], "fp8_per_tensor", *words[at + 2 :]]
        if _value_after(words, "--quantization") == "fp8"
        else words
    )


def fit_line(engine: str, release: Release, words: list[str]) -> Fitted:
    """``engine``'s server line ``words`` as ``release`` takes it (see the module docstring)."""
    words = _renamed(engine, release, words)
    for _ in range(len(words) + 1):  # each pass settles one word
        missing = next((word for word in line_words(engine, words).checked if not has(engine, release, word)), None)
        if missing is None:
            return _companions(engine, release, words)
        older = _older_form(engine, release, words, missing)
        if older is None:
            entry = span(engine, missing)
            why = "not in the flags table" if entry is None else describe(entry)
            name = ENGINE_NAMES.get(engine, engine)
            return Fitted(None, f"no {engine} line: {name} {format_release(release)} has no {missing} ({why})")
        words = older
    raise AssertionError("fit_line did not settle")  # every pass removes or replaces a missing word


def fit_lines(lines: dict[str, list[str]], releases: dict[str, Release]) -> tuple[dict[str, list[str]], list[str]]:
    """Every line of ``lines`` (``vllm``, ``sglang``, ``trtllm``, their ``_workers``) fitted to its engine's release
    in ``releases``: the lines kept, and a note for each engine whose line the release cannot run (its workers'
    line goes with it). A line that is not the engine's server (``ray start``) is kept as it is."""
    out: dict[str, list[str]] = {}
    notes: list[str] = []
    dropped: set[str] = set()
    for name, words in lines.items():
        engine = name.split("_")[0]
        if engine in dropped or engine not in releases or line_words(engine, words).command is None:
            if engine not in dropped:
                out[name] = words
            continue
        fitted = fit_line(engine, releases[engine], words)
        if fitted.words is None:
            dropped.add(engine)
            out.pop(engine, None)
            notes.append(fitted.note or f"no {engine} line")
            continue
        out[name] = fitted.words
    return {name: words for name, words in out.items() if name.split("_")[0] not in dropped}, notes


def releases_for(generation: Generation, typed: str | None) -> dict[str, Release]:
    """The release each engine's line is written for: the priced engine's ``release_meant`` (the one typed, else its
    generation's latest), every other engine's latest."""
    releases = {engine: LATEST_RELEASE for engine in ENGINE_NAMES}
    releases[generation.engine] = release_meant(generation, typed)
    return releases


def _just_before(release: Release) -> Release:
    """The last release before ``release`` as a range names it: the post before, the minor before's newest patch
    (``0.10.0`` -> ``0.9.x``), else the patch before's newest post."""
    major, minor, patch, post = release
    if post:
        return major, minor, patch, post - 1
    if patch:
        return major, minor, patch - 1, LATEST
    return major, minor - 1, LATEST, 0


def releases_running(
    generation: Generation, lines: list[list[str]], model_from: str | None = None, typed: str | None = None,
    refused: tuple[tuple[str, str], ...] = (),
) -> str:  # fmt: skip
    """The releases of ``generation`` that have every word of its engine's server ``lines`` (``flags.line_span``) and,
    from ``model_from`` (the first release whose registry has the model's architecture), the model, as a person
    writes them: the generation's own range (``0.8-0.20``) when every one of them does, else ``0.11.1-0.20.x`` (a
    line with ``--kv-offloading-size``), ``0.9.1-0.15.0`` (one with ``VLLM_ALL2ALL_BACKEND``, later removed) or
    ``0.10.1-0.20.x`` (gpt-oss, first in 0.10.1). ``refused``: (from, before) spans of releases that stop on what
    the line asks (an fp8 MLA cache on early V1: ``core.engine.mla_fp8``), as SGLang 0.4.4.post4-0.4.8 on DeepEP's
    auto mode; where the releases that run a line are two spans around one, the span holding ``typed`` (the release
    the line is written for; None: the generation's latest)."""
    assert generation.until is not None, "the latest generation's lines are written for its latest release"
    start: Release = (*generation.first, 0, 0)
    end = release_meant(generation, None)
    written_for = release_meant(generation, typed)
    first, last = start, end
    if model_from is not None:  # trials 367 #1, 368 #7: 0.8.3 offered for Qwen3 (first in 0.8.4)
        first = max(first, release_key(model_from))
    windows = [tuple(release_key(r) for r in window) for window in refused]
    if any(_deepep_auto_asked(generation.engine, words) for words in lines):  # 0.4.4.post4-0.4.8 stop on it
        windows.append(tuple(release_key(r) for r in SGLANG_DEEPEP_AUTO_REFUSED))
    for refused_from, refused_before in windows:  # review 370 #8, review 373 #5: the span holding written_for
        if written_for < refused_from:
            last = min(last, _just_before(refused_from))
        else:
            first = max(first, refused_before)
    for words in lines:
        if line_words(generation.engine, words).command is None:  # not the server (``ray start``)
            continue
        word_first, word_last = line_span(generation.engine, words)
        first, last = max(first, word_first), last if word_last is None else min(last, word_last)
        if _needs_ep_moe(generation.engine, words):  # earlier, --ep-size N alone runs the experts tp-sharded
            first = max(first, release_key(SGLANG_EP_SIZE_ALONE))
    if (first, last) == (start, end):
        return generation.releases
    if first > last:  # review 308 #7: a word one release needs, another a later one removed
        return f"none of {generation.releases} (its words were never in one release)"
    return format_release(first) if first == last else f"{format_release(first)}-{format_release(last)}"


def fit_commands(launch: dict[str, str], releases: dict[str, Release]) -> tuple[dict[str, str], list[str]]:
    """``launch`` (per engine, one shell command a line: workers, a proxy) with each server line fitted to its
    engine's release; an engine any of whose server lines the release cannot run loses all of them, with a note."""
    out: dict[str, str] = {}
    notes: list[str] = []
    for engine, text in launch.items():
        lines = [shlex.split(line) for line in text.splitlines()]
        fitted = [
            fit_line(engine, releases[engine], words) if line_words(engine, words).command else Fitted(words)
            for words in lines
        ]
        failed = next((f for f in fitted if f.words is None), None)
        if failed is not None:
            notes.append(failed.note or f"no {engine} line")
            continue
        out[engine] = "\n".join(shlex.join(f.words or []) for f in fitted)
    return out, notes
