"""The engine's own refusals of a priced deployment, as warnings ``mha kv`` and ``mha check`` both list.

A KV format the engine (at its release) has no cache of, another refusal whatever the memory (a backend the GPU
lacks, a cache the weights' dtype cannot run), and a context past the length the engine derives from the model's
config.json, which its launch line is refused at without the override variable. ``mha check`` counts them among its
warnings (``--strict`` fails on them); ``mha kv`` lists them in its JSON ``warnings`` too, so a script reading either
sees the same (trial 357 #2: kv's warnings lacked SGLang's context-length refusal that check counted). Pure Python.
"""

from __future__ import annotations

from mha_cli.core.engine.context_limit import OVERRIDES, past_derived_length
from mha_cli.core.engine.plan import deployment_kv_format_note
from mha_cli.core.engine.settings import release_in_force
from mha_cli.core.memory import MemoryPlan
from mha_cli.core.schemas import DeploymentSpec, ModelSpec


def engine_warnings(model: ModelSpec, deployment: DeploymentSpec, memory: MemoryPlan | None) -> list[str]:
    """What the engine of ``memory``'s plan refuses of ``deployment`` (the deployment as priced), one line each; none
    without an engine plan."""
    if memory is None or memory.engine is None:
        return []
    notes = []
    format_note = deployment_kv_format_note(deployment, model)  # a KV format the engine lacks: its figures only
    if format_note is not None:
        notes.append(format_note)
    elif memory.engine.refused_outright:  # another refusal whatever the memory: said too
        notes.append(f"{memory.engine.name} would not start: {memory.engine.refusal}")
    if memory.engine.name in OVERRIDES:  # past the length the engine derives: its launch line is refused
        release = release_in_force(deployment) if memory.engine.name == "vllm" else None
        refused = past_derived_length(model, deployment.seq_len, (memory.engine.name,), release)
        notes += [refused] if refused is not None else []
    return notes
