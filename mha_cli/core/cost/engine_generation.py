"""Which engine generation's step-cost constants price a plan: from what ``--engine`` says.

``--engine sglang`` names the latest generation of that engine; ``sglang@0.4.6`` (or ``vllm==0.11.0``) picks one by
version; a generation id (``vllm-v1``) names itself. The ids are the ones ``core.engine.generations`` uses (issue 34);
``split_engine`` is the one place that reads the text, so the engine-versions work can take it over. Pure Python.
"""

from __future__ import annotations

import re

from mha_cli.core.errors import BadInputError

GENERATIONS = ("vllm-v0", "vllm-v1", "vllm-0.21", "sglang-0.4", "sglang-0.5", "trtllm-cpp", "trtllm-pytorch")
"""vLLM before 0.8 (V0), 0.8-0.20 (V1), 0.21 and later; SGLang 0.4, 0.5; TensorRT-LLM's C++ engine (< 1.0) and its
PyTorch backend (1.x)."""
LATEST = {"vllm": "vllm-0.21", "sglang": "sglang-0.5", "trtllm": "trtllm-pytorch"}
"""The generation a bare engine name means."""
_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)")


def generation_for_version(engine: str, version: str) -> str:
    """The generation of ``engine`` (vllm, sglang, trtllm) at release ``version`` ("0.11.0", "v1.0.0rc2")."""
    match = _VERSION.match(version)
    if match is None:
        raise BadInputError(f"--engine {engine}@{version}: give a release number, such as {engine}@0.11")
    release = (int(match.group(1)), int(match.group(2)))
    if engine == "vllm":
        return "vllm-v0" if release < (0, 8) else "vllm-v1" if release < (0, 21) else "vllm-0.21"
    if engine == "sglang":
        if release < (0, 4):
            raise BadInputError(f"--engine sglang@{version}: the oldest SGLang modelled is 0.4 (sglang@0.4)")
        return "sglang-0.4" if release < (0, 5) else "sglang-0.5"
    return "trtllm-cpp" if release < (1, 0) else "trtllm-pytorch"


def split_engine(text: str | None) -> tuple[str | None, str | None]:
    """(engine name for the memory rules, generation id for the step costs) from ``--engine``'s text.

    None: (None, None), the default engine at the default constants. ``sglang``: ("sglang", "sglang-0.5").
    ``vllm@0.10`` or ``vllm==0.10``: ("vllm", "vllm-v1"). ``trtllm-cpp``: ("trtllm", "trtllm-cpp").
    """
    if text is None:
        return None, None
    key = text.strip().lower()
    if key in GENERATIONS:
        engine = key.split("-")[0]
        return engine, key
    name, _, version = re.split(r"(@|==)", key, maxsplit=1) if re.search(r"@|==", key) else (key, "", "")
    from mha_cli.core.engine.settings import engine_name

    engine = engine_name(name)  # refuses an unknown engine, with its one-line message
    return engine, generation_for_version(engine, version) if version else LATEST[engine]
