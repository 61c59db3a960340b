"""Which vLLM and SGLang releases have each word of ``core.engine.flags``' table, read in the releases' own sources.

    python benchmarks/engine_flag_sources.py --cache /tmp/engine_src vllm 0.2.0 0.3.0 ...   # fetch the wheels first
    python benchmarks/engine_flag_history.py --cache /tmp/engine_src --out outputs/engine_flags/presence.json

For every release under the cache (``ENGINE-VERSION/``, as ``engine_flag_sources.py`` leaves it) and every word
the table lists for that engine, whether the release's Python sources have it:

- a flag ``--x``: the string ``"--x"`` (either quote) in one of its files, or SGLang's ``ServerArgs`` field
  ``x: A[...]`` (0.5.14 and later build the flags from the fields, 0.5.20 in ``arg_groups/``); ``--no-x``: that string, or ``--x``
  declared with ``argparse.BooleanOptionalAction`` (vLLM 0.7 and later: every boolean engine argument from its
  dataclass config, 0.8 and later);
- a flag with a value: the flag, and the value as a string literal anywhere in the package (``"fp8_e4m3"``);
  ``--limit-mm-per-prompt json``: the flag built from its dataclass field (vLLM's dict arguments parse JSON),
  ``key=value``: its ``nullable_kvs`` parser; a
  ``--speculative-config`` method: the method named in ``SpeculativeConfig``'s module, ``draft_model`` V1's own
  proposer (``v1/spec_decode/draft_model.py``, from 0.34 a speculator registered under its name: 0.8-0.10 ran draft models on the V0 engine, 0.11-0.14 not at all);
- a variable ``VLLM_X``: ``"VLLM_X"`` in ``vllm/envs.py``, or read by ``os.getenv("VLLM_X"`` / ``os.environ``
  anywhere (before 0.4.2, which brought ``envs.py``: 0.4.1's CPU backend reads ``VLLM_CPU_KVCACHE_SPACE`` in
  ``executor/cpu_executor.py``); the commands: the console script (``vllm serve``) or the module file
  (``python -m sglang.launch_server``).

A flag SGLang declares only to refuse it (``action=DeprecatedAction``: ``--enable-ep-moe`` in 0.5.3-0.5.4) counts as
absent: the release stops at it.

Writes ``{engine: {release: [words present]}}`` and prints each word's first and last release seen, and where the
table disagrees. TensorRT-LLM is not read (its wheels are not on PyPI for most releases).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from mha_cli.core.engine.flags import SPANS, release_key

PACKAGE = {"vllm": "vllm", "sglang": "sglang"}
SPECULATIVE_CONFIG_FILES = ("config.py", "config/__init__.py", "config/speculative.py")
"""Where vLLM's ``SpeculativeConfig`` and its methods are declared (one file, then a package from 0.10)."""


class Sources:
    """One release's Python files, read once."""

    def __init__(self, root: Path, package: str) -> None:
        self.root = root
        self.files = {p.relative_to(root).as_posix(): p.read_text(errors="replace") for p in root.rglob("*.py")}
        self.package = package
        self.text = "\n".join(self.files.values())
        self.server_fields = "\n".join(
            text for name, text in self.files.items()
            if name == "sglang/srt/server_args.py" or name.startswith("sglang/srt/arg_groups/")
        )  # fmt: skip
        self.entry_points = "\n".join(p.read_text() for p in root.glob("*.dist-info/entry_points.txt"))

    def literal(self, value: str) -> bool:
        return re.search(rf"""["']{re.escape(value)}["']""", self.text) is not None

    def flag(self, flag: str) -> bool:
        """``flag`` declared: its string, or (SGLang 0.5.14 and later) a ``ServerArgs`` field annotated ``A[...]``
        (in ``server_args.py``, from 0.5.20 in ``arg_groups/fields/``), whose flag is its name with dashes; not one
        declared only to refuse it (SGLang 0.5.3-0.5.4's ``action=DeprecatedAction``, which raises ValueError)."""
        field = flag.removeprefix("--").replace("-", "_")
        if self.refused(flag):
            return False
        return self.literal(flag) or re.search(rf"^\s+{field}: A\[", self.server_fields, re.M) is not None

    def refused(self, flag: str) -> bool:
        """``flag`` declared with SGLang's ``DeprecatedAction`` (0.5.3 on), whose ``__call__`` raises ValueError."""
        return re.search(rf"""["']{re.escape(flag)}["'],\s*action=DeprecatedAction""", self.server_fields) is not None

    def boolean_optional(self, flag: str) -> bool:
        """``flag`` declared with BooleanOptionalAction, or vLLM's dataclass booleans (``get_kwargs``)."""
        declared = re.search(rf"""["']{re.escape(flag)}["'][^)]{{0,400}}BooleanOptionalAction""", self.text, re.S)
        auto = re.search(r"BooleanOptionalAction", self.files.get("vllm/engine/arg_utils.py", "")) and re.search(
            rf"""["']{re.escape(flag)}["'],\s*\*\*(\{{\s*\*\*)?\w+_kwargs""", self.text
        )
        return declared is not None or bool(auto)

    def json_parsed(self, flag: str) -> bool:
        """vLLM's ``--limit-mm-per-prompt`` taking JSON: declared from its dataclass (dict fields parse JSON)."""
        return re.search(rf"""["']{re.escape(flag)}["'],\s*\*\*\w+_kwargs""", self.text) is not None

    def has(self, word: str) -> bool:
        if word == "vllm serve":
            return re.search(r"^vllm\s*=", self.entry_points, re.M) is not None
        if word.startswith("python -m "):
            return f"{word.removeprefix('python -m ').replace('.', '/')}.py" in self.files
        if word == "trtllm-serve":
            return False
        flag, _, value = word.partition(" ")
        if re.fullmatch(r"[A-Z_][A-Z0-9_]*", flag):
            read = re.search(rf"""os\.(getenv|environ\.get|environ\[)\(?["']{flag}["']""", self.text) is not None
            present = f'"{flag}"' in self.files.get("vllm/envs.py", "") or read
            return present and (not value or self.literal(value))
        if flag.startswith("--no-"):
            return self.literal(flag) or self.boolean_optional("--" + flag.removeprefix("--no-"))
        if not self.flag(flag):
            return False
        if not value:
            return True
        if value == "json":
            return self.json_parsed(flag)
        if value == "key=value":  # vLLM's image=N,video=M limits
            return "nullable_kvs" in self.files.get("vllm/engine/arg_utils.py", "")
        if value == "method=draft_model":  # V1's own draft-model proposer (V0's ran it until V0 went, in 0.11)
            registry = self.files.get("vllm/v1/worker/gpu/spec_decode/speculator_config.py", "")
            return "vllm/v1/spec_decode/draft_model.py" in self.files or '"draft_model": ' in registry
        if value.startswith("method="):  # a method SpeculativeConfig names
            config = "".join(self.files.get(f"vllm/{name}", "") for name in SPECULATIVE_CONFIG_FILES)
            return f'"{value.removeprefix("method=")}"' in config
        return self.literal(value.partition("=")[2] or value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/engine_src"))
    parser.add_argument("--out", type=Path, default=Path("outputs/engine_flags/presence.json"))
    args = parser.parse_args()
    found: dict[str, dict[str, list[str]]] = {}
    for engine, package in PACKAGE.items():
        words = [span.word for span in SPANS if span.engine == engine]
        releases = sorted(
            (p.name.removeprefix(f"{engine}-") for p in args.cache.glob(f"{engine}-*") if p.is_dir()), key=release_key
        )
        found[engine] = {}
        for release in releases:
            sources = Sources(args.cache / f"{engine}-{release}", package)
            found[engine][release] = [word for word in words if sources.has(word)]
        for span in (s for s in SPANS if s.engine == engine):
            seen = [r for r in releases if span.word in found[engine][r]]
            table = [r for r in releases if span.has(release_key(r))]
            verdict = "" if seen == table else "   <-- table differs"
            first, last = (seen[0], seen[-1]) if seen else ("-", "-")
            print(f"{engine:6} {span.word:50} seen {first:>12} .. {last:<12} table {span.first}..{span.last}{verdict}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(_json_lines(found))


def _json_lines(found: dict[str, dict[str, list[str]]]) -> str:
    """``found`` as JSON, one release a line (diffs then show which release changed)."""
    command = json.dumps("python benchmarks/engine_flag_history.py --cache /tmp/engine_src")
    parts = [f' "_command": {command}']
    for engine, releases in found.items():
        rows = ",\n".join(f"  {json.dumps(r)}: {json.dumps(words)}" for r, words in releases.items())
        parts.append(f" {json.dumps(engine)}: {{\n{rows}\n }}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


if __name__ == "__main__":
    main()
