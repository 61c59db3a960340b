"""Property-based fuzz of the ``mha`` CLI: generated invocations, as a hostile user would type them.

    python benchmarks/fuzz_cli.py --examples 2000          # release check: prints a summary, exit 1 on a failure
    python benchmarks/fuzz_cli.py --examples 200 --seed 7  # another stream of examples

Each example is one command line (``kv``, ``check``, ``recommend``, ``targets``, ``presets``, ``probe``'s cheap
refusals) built from valid values, near misses and hostile ones (huge, empty, markup, newlines, booleans in
configs, alias bombs, bad dates, 4,301-digit integers, type confusion in a config.json), with config files written
to a scratch folder. It runs in-process (typer's CliRunner) and must satisfy:

- the exit code is documented (0, 1, 2, 3, 74): never 70 (internal error) and never an escaped exception;
- a failed run (exit 2, 3 or 74) prints exactly one line, ``error: ...``, of at most ``MAX_ERROR_LINE``
  characters, and leaves stdout empty;
- a ``--json`` run that ends in a verdict (exit 0 or 1) prints one JSON object;
- ``--out`` leaves the named file only after exit 0 (and it reads back), never a temporary file;
- no example takes longer than ``MAX_SECONDS`` (a hang is a failure, not a stuck run).

The same generator and checks run a few dozen examples in CI (``tests/test_fuzz_cli.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MAX_ERROR_LINE = 1100
"""``error: `` and the message (``output.MAX_ERROR_CHARS`` is 1,000), a little room for rich's line end."""
MAX_SECONDS = 10.0
DOCUMENTED_EXITS = {0, 1, 2, 3, 74}

PRESETS = ["gpt2", "llama-3-8b", "llama-3.1-405b", "deepseek-v3", "gemma-2-9b", "mistral-7b-v0.1", "qwen3-8b"]
TARGETS = ["a100", "h100", "8xh100", "4090", "jetson-orin", "a10", "mi300x", "2 x a100-40gb", "24xjetson-orin",
           "64xtpu-v6e", "1xh100", "a100-80gb"]  # fmt: skip

HOSTILE_TEXT = [
    "", " ", "0", "-1", "1e400", "1e-400", "nan", "inf", "-0", "0x10", "1_000", "[/]", "[red]x", "[/b]", "a\nb",
    "\t", "\x00", "é", "𝟙𝟚", "9" * 4301, "1" * 20_000 + "!", "x" * 300, "true", "null", "..", "/", "-", "--json",
    "8k", "128K", "1M", "7B", "1.5T", "80GB", "24GiB", "1xa" + " " * 2000 + "b", "4097xa100", "0xa100",
]  # fmt: skip


def _numberish() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(-(10**6), 10**20).map(str),
        st.from_regex(r"[0-9]{1,6}(\.[0-9]{1,3})?\s?[kKmMgGbBtT]?(i?B)?", fullmatch=True),
    )


def values(valid: list[str]) -> st.SearchStrategy[str]:
    """A flag's value: mostly valid or near a valid one, sometimes hostile or arbitrary."""
    return st.one_of(
        st.sampled_from(valid),
        st.sampled_from(valid),
        st.sampled_from(HOSTILE_TEXT),
        _numberish(),
        st.text(max_size=24),
    )


OPTION_VALUES: dict[str, list[str]] = {
    "--seq": ["8192", "8k", "128k", "1M", "4096", "1", "1G", "21847796", "17179869184"],  # up to 2^34, the bound
    "--batch": ["1", "4", "64", "0", "-3", "1048577"],
    "--kv-dtype": ["bf16", "fp8", "int8", "int4", "fp32", "bfloat16"],
    "--weight-dtype": ["bf16", "fp8", "int4"],
    "--tp": ["1", "2", "8", "3", "4096", "4097"],
    "--block-size": ["16", "1", "65536"],
    "--target": TARGETS,
    "--mla-cache": ["absorbed", "naive"],
    "--params": ["7B", "350M", "70B", "1.5T", "125M", "256B", "1K"],
    "--priority": ["balanced", "inference", "training"],
    "--vocab": ["32000", "128256", "1"],
    "--d-model": ["4096", "1024", "100"],
    "--variant": ["MHA", "GQA", "MQA", "MLA", "mla", "XYZ"],
    "--isl": ["1024", "1", "0", "131072", "16777217", "8k"],
    "--osl": ["256", "1", "0", "-5", "4096"],
    "--concurrency": ["1", "64", "0", "1048577", "100000"],
    "--pp": ["1", "2", "3", "0", "81"],
    "--engine": ["vllm", "sglang", "trtllm", "tgi"],
    "--active-params": ["3B", "1B", "500M", "22B", "0"],
    "--experts": ["8", "64", "128", "3", "4097"],
    "--top-k": ["1", "2", "8", "0", "64"],
    "--shared-experts": ["0", "1", "2", "17", "-1"],
    "--dense-layers": ["0", "1", "3", "65", "-2"],
}
COMMAND_OPTIONS: dict[str, list[str]] = {
    "kv": ["--seq", "--batch", "--kv-dtype", "--weight-dtype", "--tp", "--block-size", "--target", "--mla-cache"],
    "check": ["--seq", "--batch", "--kv-dtype", "--weight-dtype", "--tp", "--target"],
    "recommend": ["--seq", "--batch", "--kv-dtype", "--weight-dtype", "--tp", "--target", "--priority", "--vocab",
                  "--d-model", "--variant", "--active-params", "--active-params", "--experts", "--top-k",
                  "--shared-experts", "--dense-layers"],
    "plan": ["--isl", "--osl", "--concurrency", "--tp", "--pp", "--weight-dtype", "--kv-dtype", "--engine"],
}  # fmt: skip

SMALL_MODEL = {"d_model": 256, "n_layers": 2, "n_heads": 4, "vocab_size": 1000, "d_ff": 512}
HF_MODEL = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 512}  # fmt: skip
HOSTILE_FIELD_VALUES = [True, False, None, "64", "", "[/]", 0, -1, 64.0, 64.5, 10**30, [], [1, 2], {}, {"a": 1},
                        "x" * 500]  # fmt: skip
HF_KEYS = ["layer_types", "sliding_window_pattern", "sliding_window", "first_k_dense_replace", "head_dim",
           "vocab_size", "num_local_experts", "num_experts_per_tok", "kv_lora_rank", "qk_rope_head_dim",
           "max_window_layers", "num_key_value_heads", "hidden_size", "text_config", "tie_word_embeddings"]  # fmt: skip
RAW_DOCUMENTS = [
    "notes: [2001-13-01]\n", "notes: !!int abc\n", "model: {d_model: " + "1" * 5000 + "}\n",
    "model: " + "[" * 5000 + "]" * 5000 + "\n", "model: [unclosed\n", "- 1\n- 2\n", "", "\ufeffmodel: {d_model: 64}\n",
    "model: &a\n  x: *a\n", "model: !!python/object/apply:os.system ['echo hi']\n",
    "a0: &a0 [x,x,x,x,x,x,x,x,x]\n" + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i-1}"] * 9) + "]\n" for i in range(1, 9))
    + "model:\n  d_model: *a8\n",
]  # fmt: skip


@st.composite
def config_files(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """(category, file suffix, bytes): our config or an HF config.json with one field made hostile, or a raw
    document that stresses the parser."""
    kind = draw(st.sampled_from(["config", "hf-config", "raw"]))
    if kind == "raw":
        return "raw-document", draw(st.sampled_from([".yaml", ".json"])), draw(st.sampled_from(RAW_DOCUMENTS)).encode()
    if kind == "config":
        model = dict(SMALL_MODEL)
        key = draw(st.sampled_from([*SMALL_MODEL, "n_kv_heads", "head_dim", "sliding_window", "layer_pattern", "mla",
                                    "moe", "unknown_field"]))  # fmt: skip
        data: dict = {"model": model}
        if draw(st.booleans()):
            model[key] = draw(st.sampled_from(HOSTILE_FIELD_VALUES))
        if draw(st.booleans()):
            data["deployment"] = {draw(st.sampled_from(["seq_len", "batch", "tp", "target", "kv_dtype"])):
                                  draw(st.sampled_from([*HOSTILE_FIELD_VALUES, "8k", "a100"]))}  # fmt: skip
    else:
        data = dict(HF_MODEL)
        for _ in range(draw(st.integers(0, 2))):
            data[draw(st.sampled_from(HF_KEYS))] = draw(
                st.sampled_from([*HOSTILE_FIELD_VALUES, 100_000, 1e11, ["sliding_attention", "full_attention"]])
            )
    suffix = draw(st.sampled_from([".yaml", ".json"]))
    if suffix == ".json":
        text = json.dumps(data)
    else:
        import yaml

        text = yaml.safe_dump(data)
    return kind, suffix, text.encode()


@dataclass
class Example:
    category: str
    args: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    out: str | None = None


@st.composite
def examples(draw: st.DrawFn) -> Example:
    command = draw(
        st.sampled_from(["kv", "kv", "check", "recommend", "recommend", "plan", "targets", "presets", "probe"])
    )
    files: dict[str, bytes] = {}
    out = None
    if command in ("targets", "presets"):
        args = [command]
        category = command
        if command == "targets" and draw(st.booleans()):
            args.append(draw(values(TARGETS)))
            category = "targets-name"
    elif command == "probe":  # only refusals before torch is imported: bounds and shapes
        category = "probe-bounds"
        flag = draw(st.sampled_from(["--seed", "--d-model", "--heads", "--kv-heads"]))
        beyond = ["9223372036854775808", "-1", "4294967296"] if flag == "--seed" else ["200000", "4097", "10" * 20]
        args = ["probe", "the cat sat", flag, draw(st.sampled_from(beyond))]
    else:
        if command == "recommend":
            args = ["recommend", "--params", draw(values(OPTION_VALUES["--params"]))]
            category = "recommend"
            if draw(st.integers(0, 3)) == 0:
                out = draw(st.sampled_from(["design.yaml", "design.json", "design.yml", "design.txt", "sub/design.yaml",
                                            "x" * 300 + ".yaml"]))  # fmt: skip
                args += ["--out", out]
                category = "recommend-out"
        else:
            source_kind = draw(st.sampled_from(["preset", "preset", "file", "file", "text"]))
            if source_kind == "preset":
                source = draw(st.sampled_from(PRESETS))
                category = f"{command}-preset"
            elif source_kind == "file":
                kind, suffix, data = draw(config_files())
                source = f"source{suffix}"
                files[source] = data
                category = f"{command}-{kind}"
            else:
                source = draw(st.sampled_from(HOSTILE_TEXT))
                category = f"{command}-hostile-source"
            args = [command, source]
            if command == "plan":  # --target is required
                args += ["--target", draw(values(TARGETS))]
        for option in draw(st.lists(st.sampled_from(COMMAND_OPTIONS[command]), max_size=3, unique=True)):
            args += [option, draw(values(OPTION_VALUES[option]))]
    if draw(st.booleans()):
        args.append("--json")
    return Example(category=category, args=args, files=files, out=out)


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang


def invoke(args: list[str]) -> tuple[int, str, str, BaseException | None]:
    """``mha ARGS`` in-process through the console entry (``app.main``, as the installed ``mha`` runs it):
    (exit code, stdout, stderr, an exception that escaped ``main`` other than ``SystemExit``)."""
    from mha_cli.cli.app import main

    stdout, stderr = io.StringIO(), io.StringIO()
    saved_argv = sys.argv
    sys.argv = ["mha", *args]
    escaped: BaseException | None = None
    code = 0
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Hang:
        raise
    except BaseException as exc:  # the finding: anything but SystemExit escaping the entry point
        escaped, code = exc, -1
    finally:
        sys.argv = saved_argv
    return code, stdout.getvalue(), stderr.getvalue(), escaped


def check_example(example: Example, scratch: Path) -> tuple[int | None, str | None]:
    """Run one example in ``scratch`` (the working folder): (exit code, what is wrong with it or None)."""
    import os

    from mha_cli.core.config_io import read_mapping

    for name, data in example.files.items():
        (scratch / name).write_bytes(data)
    (scratch / "sub").mkdir(exist_ok=True)
    before = set(os.listdir(scratch))
    cwd = os.getcwd()
    os.chdir(scratch)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, MAX_SECONDS)
    start = time.perf_counter()
    try:
        code, stdout, stderr, escaped = invoke(example.args)
    except Hang:
        return None, f"took longer than {MAX_SECONDS:.0f} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
    elapsed = time.perf_counter() - start
    problems = []
    if escaped is not None:
        problems.append(f"escaped {escaped.__class__.__name__}: {str(escaped)[:200]}")
    if code not in DOCUMENTED_EXITS:
        problems.append(f"exit {code}: {stderr.strip()[:300]}")
    if code not in (0, 1):
        if stderr.count("\n") != 1 or not stderr.startswith("error: "):
            problems.append(f"exit {code} without exactly one error line: {stderr[:300]!r}")
        if len(stderr) > MAX_ERROR_LINE:
            problems.append(f"error line of {len(stderr):,} characters")
        if stdout:
            problems.append(f"exit {code} with stdout {stdout[:100]!r}")
    elif "--json" in example.args and example.args[0] != "probe":
        try:
            if not isinstance(json.loads(stdout), dict):
                problems.append("--json printed something other than one object")
        except json.JSONDecodeError:
            problems.append(f"--json printed no JSON: {stdout[:100]!r}")
    after = set(os.listdir(scratch)) | {f"sub/{n}" for n in os.listdir(scratch / "sub")}
    leftovers = [n for n in after if n.endswith(".tmp")]
    if leftovers:
        problems.append(f"temporary files left: {leftovers}")
    if example.out is not None:
        written = scratch / example.out
        exists = os.path.lexists(written) if len(example.out) < 255 else False
        if code == 0 and not exists:
            problems.append("exit 0 but --out wrote nothing")
        if code != 0 and exists and example.out not in before:
            problems.append(f"exit {code} but --out left {example.out}")
        if code == 0 and exists:
            try:
                read_mapping(written)
            except Exception as exc:  # any failure to read back is the finding
                problems.append(f"--out file does not read back: {exc}")
    if elapsed > MAX_SECONDS:
        problems.append(f"took {elapsed:.1f} s")
    return code, "; ".join(problems) or None


@dataclass
class Summary:
    examples: int = 0
    categories: Counter = field(default_factory=Counter)
    exit_codes: Counter = field(default_factory=Counter)
    failures: list[tuple[list[str], str]] = field(default_factory=list)
    slowest: float = 0.0


def run(n_examples: int, seed: int | None) -> Summary:
    """Generate and check ``n_examples`` invocations; failures are collected, not raised."""
    summary = Summary()
    with tempfile.TemporaryDirectory(prefix="mha-fuzz-") as root:

        def one(example: Example) -> None:
            scratch = Path(root) / f"e{summary.examples}"
            scratch.mkdir()
            start = time.perf_counter()
            code, problem = check_example(example, scratch)
            summary.slowest = max(summary.slowest, time.perf_counter() - start)
            summary.examples += 1
            summary.categories[example.category] += 1
            summary.exit_codes[code] += 1
            if problem:
                summary.failures.append((example.args, problem))

        test = given(examples())(one)
        test = settings(max_examples=n_examples, deadline=None, database=None, derandomize=seed is None,
                        suppress_health_check=list(HealthCheck))(test)  # fmt: skip
        if seed is not None:
            test = hypothesis.seed(seed)(test)
        test()
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="invocations to generate (default 500)")
    parser.add_argument("--seed", type=int, default=None, help="a seed for another stream (default: derandomized)")
    options = parser.parse_args()
    start = time.perf_counter()
    summary = run(options.examples, options.seed)
    print(f"examples: {summary.examples} in {time.perf_counter() - start:.0f} s"
          f" (slowest {summary.slowest:.2f} s)")  # fmt: skip
    print("categories: " + ", ".join(f"{name} {count}" for name, count in sorted(summary.categories.items())))
    print("exit codes: " + ", ".join(f"{code} x{count}" for code, count in sorted(summary.exit_codes.items(), key=str)))
    print(f"failures: {len(summary.failures)}")
    for args, problem in summary.failures[:20]:
        shown = " ".join(a if len(a) < 60 else a[:60] + f"...({len(a)} chars)" for a in args)
        print(f"  mha {shown!r}\n    {problem}")
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
