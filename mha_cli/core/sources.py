"""What a SOURCE argument names: a preset, one of our config files, or a Hugging Face config.json."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from mha_cli.core.errors import BadInputError, one_line, quoted_path, shown_path
from mha_cli.core.presets import checkpoint_weights, find_preset, preset_names
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.suggest import did_you_mean

if TYPE_CHECKING:
    from mha_cli.core.hf_import import ImportedModel
    from mha_cli.core.hf_quantization import CheckpointWeights

SourceKind = Literal["preset", "config", "hf-config"]


class ModelSource(Record):
    """A resolved SOURCE: the model, the deployment a config file carried, and what was assumed."""

    kind: SourceKind
    origin: str
    model: ModelSpec
    deployment: DeploymentSpec | None = None
    notes: list[str] = Field(default_factory=empty_list)
    """The config file's notes (``mha recommend`` records an explicit ``--variant`` there)."""
    assumptions: list[str] = Field(default_factory=empty_list)


def load_source(source: str) -> ModelSource:
    """Resolve ``source``: a preset name wins; otherwise a path to a YAML/JSON file."""
    preset = find_preset(source)
    if preset is not None:
        return _with_checkpoint_format(
            ModelSource(kind="preset", origin=source, model=preset.model_copy(deep=True)), checkpoint_weights(source)
        )
    path = Path(source)
    if not _may_exist(path):
        hint = did_you_mean(source, preset_names(), otherwise="run `mha presets`, or give a path to a config")
        raise BadInputError(f"{quoted_path(source)} is neither a preset nor a file: {hint}")
    # The file readers are imported here: a preset (the common case, and every `--json` test run) never pays for them.
    from mha_cli.core.config_io import parse_config, read_mapping
    from mha_cli.core.hf_import import looks_like_hf_config
    from mha_cli.core.hf_quantization import read_checkpoint_weights

    data = read_mapping(path)  # says why a path that is there cannot be read
    if looks_like_hf_config(data):
        imported = _import_untrusted(data, path)
        source = ModelSource(kind="hf-config", origin=str(path), model=imported.model, assumptions=imported.assumptions)
        stored = read_checkpoint_weights(_with_modelopt_sidecar(data, path), shown_path(path))
        return _with_checkpoint_weights(source, stored)
    if "model" not in data and "d_model" in data:
        data = {"model": data}
    config = parse_config(data, str(path))
    return ModelSource(
        kind="config", origin=str(path), model=config.model, deployment=config.deployment, notes=config.notes
    )


def _with_checkpoint_format(source: ModelSource, stored_as: str | None) -> ModelSource:
    """``source`` priced in the format its checkpoint stores (``--weight-dtype`` still overrides it)."""
    if stored_as is None:
        return source
    return source.model_copy(
        update={
            "deployment": DeploymentSpec(weight_dtype=stored_as),
            "assumptions": [
                *source.assumptions,
                f"weights as the checkpoint stores them: {stored_as} (quantization_config)",
            ],
        }
    )


def _with_checkpoint_weights(source: ModelSource, stored: "CheckpointWeights | None") -> ModelSource:
    """``source`` priced as its checkpoint stores it: a named format, or tensor by tensor by its scheme, with the
    config's patterns that name none of the model's modules said (``--weight-dtype`` still overrides it)."""
    if stored is None or stored.scheme is None:
        return _with_checkpoint_format(source, None if stored is None else stored.format)
    from mha_cli.core.weight_bytes import model_modules

    scheme = stored.scheme
    notes = [f"weights as the checkpoint stores them: {scheme.format} (quantization_config), tensor by tensor:"
             f" {scheme.describe()}"]  # fmt: skip
    unmatched = scheme.unmatched(model_modules(source.model))
    if unmatched:
        shown = ", ".join(unmatched[:4]) + (f" and {len(unmatched) - 4} more" if len(unmatched) > 4 else "")
        notes.append(
            f"quantization_config names modules {source.model.name} has none of, under mha's (Llama-style) names:"
            f" {shown}; those entries change nothing"
        )
    return source.model_copy(
        update={
            "deployment": DeploymentSpec(weight_dtype=scheme.format, weight_scheme=scheme),
            "assumptions": [*source.assumptions, *notes],
        }
    )


def _with_modelopt_sidecar(data: dict, path: Path) -> dict:
    """``data`` with the ``hf_quant_config.json`` beside it as its quantization_config, when it has none (a ModelOpt
    checkpoint, which vLLM reads the same way)."""
    sidecar = path.parent / "hf_quant_config.json"
    if "quantization_config" in data or not sidecar.is_file():
        return data
    from mha_cli.core.config_io import read_mapping

    return {**data, "quantization_config": read_mapping(sidecar)}


def _import_untrusted(data: dict, path: Path) -> "ImportedModel":
    """``import_hf_config`` on a file from anywhere: a field of an unexpected type or shape (a string where a list
    of layer types belongs, a list where a count does) is bad input, one line, whatever reader trips on it."""
    from mha_cli.core.hf_import import import_hf_config

    try:
        return import_hf_config(data, name=_hf_name(path), origin=str(path))
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
        if os.environ.get("MHA_DEBUG"):
            raise
        raise BadInputError(
            f"{shown_path(path)}: a field of this config.json has an unexpected type or shape"
            f" ({exc.__class__.__name__}: {one_line(str(exc), 80)}; MHA_DEBUG=1 shows where)"
        ) from None


def _may_exist(path: Path) -> bool:
    """False only when nothing is at ``path``; a name too long or a folder without permission is for ``read_mapping``
    to explain."""
    try:
        path.lstat()
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    return True


def _hf_name(path: Path) -> str:
    """A readable name for an HF config: its folder for ``.../Llama-3-8B/config.json``."""
    if path.stem == "config" and path.resolve().parent.name:
        return path.resolve().parent.name
    return path.stem
