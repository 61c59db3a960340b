"""Each way out re-priced: the flags it names applied to the deployment and the memory plan run again.

``core.fit`` finds the ways out and words them (``--kv-dtype fp8 (50% of this cache; not enough on its own)``);
this module checks each one as a user pasting it would: the flags set on the deployment, ``price_deployment`` run
again. A script reads whether a way fits on its own (``fits``) and what it gives (``figure``,
``max_sequences``); the report prints ``text``. Pure Python.
"""

import shlex
from collections.abc import Callable

from mha_cli.core.errors import MhaError
from mha_cli.core.fit import price_deployment
from mha_cli.core.quantities import format_bytes
from mha_cli.core.record import Record
from mha_cli.core.rules.engine import counted
from mha_cli.core.schemas import DeploymentSpec, ModelSpec

FLAG_FIELDS: dict[str, tuple[str, type]] = {
    "--target": ("target", str),
    "--tp": ("tp", int),
    "--weight-dtype": ("weight_dtype", str),
    "--kv-dtype": ("kv_dtype", str),
    "--batch": ("batch", int),
    "--seq": ("seq_len", int),
    "--gpu-memory-utilization": ("gpu_memory_utilization", float),
    "--max-num-seqs": ("max_num_seqs", int),
}
"""The deployment field each flag a way out names sets."""


class WayOut(Record):
    """One way out of a plan that does not fit, re-priced."""

    text: str
    """As the report prints it: the flags, then why in brackets; ``none: ...`` when nothing fits."""
    change: str
    """The flags alone (empty for ``none: ...``): what to add to the command."""
    fits: bool
    """Whether the plan fits with this change on its own (re-priced, not assumed)."""
    figure: str
    """What the change gives: the sequences that run at once and the weights per device, or why it does not fit."""
    max_sequences: int | None = None
    """Sequences of the (new) context the engine runs at once with the change, over all replicas."""


def _changed(deployment: DeploymentSpec, words: list[str]) -> DeploymentSpec | None:
    """The deployment with the flags set; None when a flag is not a deployment field (it changes the design)."""
    if any(flag not in FLAG_FIELDS for flag in words[::2]):
        return None
    return deployment.model_copy(update=flag_updates(words))


Rerun = Callable[[list[str]], tuple[bool, str, int | None]]
"""A command run again with a way's flags (``mha recommend``: the recommender, which may place or shape the design
anew): (fits, figure, max_sequences)."""


def reprice(model: ModelSpec, deployment: DeploymentSpec, text: str, *, rerun: Rerun | None = None) -> WayOut:
    """``text`` (a way out of ``core.fit``) applied to ``deployment`` and priced again, or, with ``rerun``, the
    command run again with its flags (what a user pasting it gets)."""
    if text.startswith("none:"):
        return WayOut(text=text, change="", fits=False, figure=text.removeprefix("none:").strip())
    change = text.split(" (")[0].strip()
    words = shlex.split(change)
    if rerun is not None:
        fits, figure, sequences = rerun(words)
        return WayOut(text=text, change=change, fits=fits, figure=figure, max_sequences=sequences)
    changed = _changed(deployment, words)
    if changed is None:
        return WayOut(text=text, change=change, fits=False, figure="not re-priced: it changes the design")
    try:
        priced = price_deployment(model, changed)
    except MhaError as exc:
        return WayOut(text=text, change=change, fits=False, figure=f"refused: {exc.message}")
    plan = priced.memory
    if plan is None:
        return WayOut(text=text, change=change, fits=False, figure="no target to price it on")
    layout = f"tp {plan.tp}" + (f" x {plan.replicas} replicas" if plan.replicas > 1 else "")
    if not plan.weights_fit:
        figure = f"weights {format_bytes(plan.weight_bytes_per_device)} per device still exceed the device ({layout})"
    else:
        at_once = counted(plan.max_sequences, "sequence")
        figure = (
            f"{at_once} of {changed.seq_len:,} tokens at once for a batch of {changed.batch} ({layout}); weights"
            f" {format_bytes(plan.weight_bytes_per_device)} per device"
        )
    return WayOut(text=text, change=change, fits=plan.fits, figure=figure, max_sequences=plan.max_sequences)


def reprice_all(
    model: ModelSpec, deployment: DeploymentSpec, texts: list[str], *, rerun: Rerun | None = None
) -> list[WayOut]:
    """Every way out of ``texts`` re-priced (``reprice``)."""
    return [reprice(model, deployment, text, rerun=rerun) for text in texts]


def flag_updates(words: list[str], fields: dict[str, tuple[str, type]] | None = None) -> dict[str, object]:
    """The ``{field: value}`` the flags of ``words`` set (``FLAG_FIELDS``' names unless ``fields`` maps them)."""
    fields = fields or FLAG_FIELDS
    return {fields[flag][0]: fields[flag][1](value) for flag, value in zip(words[::2], words[1::2], strict=False)}
