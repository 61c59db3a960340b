"""Every causal-LM family of the installed transformers: does `mha` count the weights transformers builds?

For each family the same tiny config as the cache sweep (benchmarks/family_sweep.py: its own config class, shrunk)
builds transformers' causal LM on the meta device (nothing allocated, nothing downloaded) and its parameters are
counted; `mha`'s importer reads the config's ``to_dict()`` and ``count_params`` counts its spec. Each family lands
in one class:

- exact: the same number of weights;
- different, said: not the same, and what `mha kv` prints says so (the family's ``uncounted`` note, the mixer's
  weights note, or an ``assumed:`` line that names what is not counted, such as a multimodal model's towers);
- different, unsaid: not the same and nothing printed says so, a silent wrong figure
  (tests/test_family_sweep.py fails on any);
- refused: `mha` refuses the config (the line shown);
- not built: transformers could not build the tiny model.

Run: `python benchmarks/weights_sweep.py [--json] [--only TYPE ...]` (about a minute; nothing is downloaded).
``sweep_one(model_type, activation)`` judges the config with its MLP's activation swapped: a family's modeling code
builds one MLP whatever the activation (tests/test_family_sweep.py swaps it on twelve families).
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from family_sweep import _tiny_config, failure, run_sweep  # noqa: E402

from mha_cli.core.deployment import family_weights_note, mixer_weights_note  # noqa: E402
from mha_cli.core.errors import MhaError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402


@dataclass(frozen=True)
class Row:
    model_type: str
    verdict: str
    reference: int | None = None
    counted: int | None = None
    detail: str = ""


ACTIVATION_FIELDS = ("hidden_act", "hidden_activation", "activation_function")
"""Where config classes keep their MLP's activation."""


def _reference_weights(model_type: str, activation: str | None = None):
    """(config, transformers' parameter count) of the family's tiny config, built on the meta device; ``activation``:
    its MLP's activation set to that (a Llama with gelu still builds gate, up and down)."""
    import torch
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        config = _tiny_config(model_type)
        if activation is not None:
            field = next((name for name in ACTIVATION_FIELDS if hasattr(config, name)), None)
            if field is None:
                raise ValueError(f"{model_type}: its config has none of {', '.join(ACTIVATION_FIELDS)}")
            setattr(config, field, activation)
        with torch.device("meta"):
            return config, sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())


def said_uncounted(imported) -> str | None:
    """What `mha kv` prints about weights it does not count for this model, if anything."""
    model = imported.model
    notes = [family_weights_note(model), mixer_weights_note(model)]
    notes += [line for line in imported.assumptions if "not counted" in line or "understated" in line]
    said = [note for note in notes if note]
    return said[0] if said else None


def sweep_one(model_type: str, activation: str | None = None) -> Row:
    """The family's tiny config judged (``activation``: with its MLP's activation set to that, see
    ``_reference_weights``)."""
    try:
        config, reference = _reference_weights(model_type, activation)
    except Exception as exc:  # transformers could not build it: not a figure of ours to judge
        return Row(model_type, "not built", detail=failure(exc))
    try:
        imported = import_hf_config(config.to_dict(), name=model_type)
    except MhaError as exc:
        return Row(model_type, "refused", reference, detail=exc.message[:160])
    counted = count_params(imported.model).total
    if imported.model.vision is not None:  # AutoModelForCausalLM builds the text model: its tower is not in the count
        from mha_cli.core.vision_tower import tower_params

        counted -= tower_params(imported.model.vision)
    if counted == reference:
        return Row(model_type, "exact", reference, counted)
    gap = f"{counted - reference:+,} ({(counted - reference) / reference:+.2%})"
    said = said_uncounted(imported)
    if said is not None:
        return Row(model_type, "different, said", reference, counted, f"{gap}: {said[:100]}")
    return Row(model_type, "different, unsaid", reference, counted, gap)


def _figures(row: Row) -> str:
    return f"{row.reference or 0:>13,} {'' if row.counted is None else format(row.counted, ','):>13}"


def main(argv: list[str] | None = None) -> int:
    return run_sweep(argv, __doc__.splitlines()[0], sweep_one, _figures)


if __name__ == "__main__":
    sys.exit(main())
