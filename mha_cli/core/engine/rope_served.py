"""RoPE scalings an engine release cannot load: ``--engine vllm@0.3`` on Llama 3.1, whose ``rope_scaling`` is of
type ``llama3``, was priced with a launch line that release cannot start.

``FIRST_RELEASE[(engine, type)]``: the first release that reads that scaling, with its source. vLLM read ``llama3``
first in 0.5.3, the release of Llama 3.1's week: 0.5.2 fails on its config (vllm-project/vllm#6692, "vllm/
vllm-openai:v0.5.2" with ``rope_type: llama3``); the maintainers' "Meta Llama 3.1 Known Issues & FAQ"
(vllm-project/vllm#6689) asks for 0.5.3.post1, which fixed it further. SGLang's generations modelled (0.4 on) all
read it. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import release_key
from mha_cli.core.engine.releases_read import ENGINE_NAMES
from mha_cli.core.schemas import ModelSpec

FIRST_RELEASE: dict[tuple[str, str], tuple[str, str]] = {
    ("vllm", "llama3"): ("0.5.3", "vllm-project/vllm#6692: 0.5.2 fails; #6689 asks for 0.5.3.post1"),
}


def rope_refusal(engine: str, release: str, model: ModelSpec) -> str | None:
    """Why ``engine`` ``release`` cannot load ``model``'s RoPE scaling, in one line with the way out; None if it can."""
    rope = model.attention.rope
    scaling = None if rope is None else rope.scaling
    if scaling is None or (engine, scaling.type) not in FIRST_RELEASE:
        return None
    first, source = FIRST_RELEASE[(engine, scaling.type)]
    if release_key(release) >= release_key(first):
        return None
    return (
        f"{ENGINE_NAMES[engine]} {release} cannot load {model.name}'s {scaling.type} RoPE scaling (rope_scaling; first"
        f" read in {first}: {source}): give --engine {engine}@{first} or later"
    )
