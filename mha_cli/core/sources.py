"""What a SOURCE argument names: a preset, one of our config files, a Hugging Face config.json or model folder, or a
Hugging Face id (read from the local Hugging Face cache, else the preset for it).

The first that fits wins: a preset's name; a file or folder that is there; a Hugging Face id, its config.json from
the cache, else the preset listed for it (``core.preset_ids``); a preset's short name (``deepseek-r1``). Nothing is
ever fetched. The source line of each command's output says which was used (``kind``, ``origin``).
"""

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from mha_cli.core.dtypes import FLOAT16_REFUSED
from mha_cli.core.errors import BadInputError, UnpricedQuantizationError, one_line, quoted_path, shown_path
from mha_cli.core.hf_cache import HfId, find_cached, hub_cache, is_folder, parse_hf_id
from mha_cli.core.preset_ids import TOWER_LEFT_OUT, checkpoint_id, id_for_short_name, preset_for_id, short_names
from mha_cli.core.presets import CHECKPOINT_DTYPES, checkpoint_weights, find_preset, get_preset, preset_names
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.served_model import ServedModel, by_id, by_preset, from_config, from_gguf, placeholder
from mha_cli.core.suggest import did_you_mean_model
from mha_cli.core.vllm_quantization import PastedQuantization

if TYPE_CHECKING:
    from mha_cli.core.hf_import import ImportedModel
    from mha_cli.core.hf_quantization import CheckpointWeights, DeclaredKv
    from mha_cli.core.weight_scheme import WeightScheme

SourceKind = Literal["preset", "config", "hf-config", "hf-cache", "hf-shipped", "gguf"]
"""``gguf``: a GGUF file's header; ``hf-config``: a config.json (or model folder) given by path; ``hf-cache``: one found by its Hugging Face id."""


def _no_checkpoint() -> ServedModel:
    return placeholder("the source names no checkpoint")


class ModelSource(Record):
    """A resolved SOURCE: the model, the deployment a config file carried, and what was assumed."""

    kind: SourceKind
    origin: str
    model: ModelSpec
    deployment: DeploymentSpec | None = None
    notes: list[str] = Field(default_factory=empty_list)
    """The config file's notes (``mha recommend`` records an explicit ``--variant`` there)."""
    assumptions: list[str] = Field(default_factory=empty_list)
    read_as: list[str] = Field(default_factory=empty_list)
    """Of the assumptions, those saying which file or value was read where another was there too (a preset over a
    folder of its name, a config.json key given twice): ``mha plan``, which prints no source line, says them too."""
    served: ServedModel = Field(default_factory=_no_checkpoint)
    """What a launch line loads for this model (``core.served_model``)."""


def load_source(source: str, *, weight_dtype: str | None = None) -> ModelSource:
    """Resolve ``source`` (see the module docstring); ``BadInputError`` in one line when nothing fits.
    ``weight_dtype``: the format ``--weight-dtype`` prices every weight in, overriding a config.json's
    quantization_config, which is then not read (one mha cannot read is not refused)."""
    if not source.strip():  # ``mha kv "$MODEL"`` with it unset: not the folder '.', which Path("") names
        raise BadInputError(
            "SOURCE is empty: give a preset (`mha presets`), a config file, a model folder or a Hugging Face id"
            " (org/name)"
        )
    preset = find_preset(source)
    if preset is not None:
        repo = checkpoint_id(preset.name)
        also_here = _shadowed_path_note(source, preset.name)
        found = _preset(source, preset.name, _no_checkpoint() if repo is None else by_preset(repo), also_here)
        return found if also_here is None else found.model_copy(update={"read_as": [also_here]})
    path = Path(source)
    if _may_exist(path):
        return _load_path(path, weight_dtype)
    hf_id = parse_hf_id(source)
    if hf_id is not None:
        return _load_hf_id(hf_id, weight_dtype)
    repo = id_for_short_name(source)
    if repo is not None:
        name = preset_for_id(repo)
        assert name is not None  # every short name is a listed id's
        return _preset(source, name, by_preset(repo), f"{repo}: priced as preset {name}{_tower_left_out(name)}")
    from mha_cli.core.shipped_configs import shipped_id_for_short_name

    shipped = shipped_id_for_short_name(source)  # glm-5.1: the id mha ships a config.json for (review 409 #12)
    if shipped is not None:
        return _load_hf_id(HfId(shipped), weight_dtype)
    hint = did_you_mean_model(  # not the shipped ids' names: mistral-7b-v0.3 is no Mistral-7B-Instruct-v0.3
        source, [*preset_names(), *short_names()],
        otherwise="run `mha presets`, or give a config file, a model folder or a Hugging Face id (org/name)",
    )  # fmt: skip
    raise BadInputError(f"{quoted_path(source)} is neither a preset nor a file: {hint}")


def _shadowed_path_note(source: str, preset: str) -> str | None:
    """Where a file or folder named ``source`` is in the working folder too, the line saying the preset was read and
    how to read the path (``hf download X --local-dir gpt2; mha kv gpt2``: the preset wins, said; trial 304 #5)."""
    path = Path(source)
    if "/" in source or not _may_exist(path):
        return None
    try:
        what = "folder" if path.is_dir() else "file"
    except OSError:  # there, but not to be looked into: named as a path
        what = "path"
    return f"preset {preset} read; a {what} {quoted_path(source)} is here too: give ./{source} to read it"


def resolution_note(source: ModelSource) -> str | None:
    """How ``source`` became the model priced when it named neither a preset nor a file: a Hugging Face id's
    config.json from the local cache (its commit), or the preset listed for an id (or its short name) not cached;
    for a command that prints no source line (``mha plan``). None otherwise. It is the first of the assumptions
    (``_preset``, ``_load_hf_id``)."""
    resolved = source.kind in ("hf-cache", "hf-shipped") or (
        source.kind == "preset" and find_preset(source.origin) is None
    )
    return source.assumptions[0] if resolved and source.assumptions else None


def _tower_left_out(preset: str) -> str:
    """What a text preset standing for a multimodal checkpoint leaves out (``TOWER_LEFT_OUT``), said after the
    'priced as preset' line; empty for any other preset."""
    if preset not in TOWER_LEFT_OUT:
        return ""
    return (
        f", its text model only: the checkpoint's vision tower and projector ({TOWER_LEFT_OUT[preset]:,} parameters,"
        " which vLLM loads) are not counted"
    )


def _preset(typed: str, name: str, served: ServedModel, assumption: str | None = None) -> ModelSource:
    """Preset ``name`` as ``typed`` (a name, a short name or an id), priced in its checkpoint's format."""
    # constructed, not validated: every part is valid already (the preset and ``served`` are validated models), and
    # a command that never prints the source does not build its validator (``mha kv``'s start, core.record)
    from mha_cli.core.remote_code import preset_remote_code

    remote_code = preset_remote_code(name)
    if remote_code is not None:
        served = served.model_copy(update={"remote_code": remote_code})
    source = ModelSource.model_construct(
        kind="preset", origin=typed, model=get_preset(name).model_copy(deep=True), served=served,
        assumptions=[] if assumption is None else [assumption],
    )  # fmt: skip
    stored = CHECKPOINT_DTYPES.get(name.strip().lower())
    if stored is not None:  # a float16 checkpoint, as its config.json prices it
        source = _with_float16_checkpoint(source, {"torch_dtype": stored, "model_type": source.model.family})
    return _with_checkpoint_format(source, checkpoint_weights(name))


def _load_hf_id(hf_id: HfId, weight_dtype: str | None = None) -> ModelSource:
    """``hf_id``'s config.json from the Hugging Face cache, else the preset listed for it, else one line saying where
    it looked and how to get the config."""
    found = find_cached(hf_id)
    served = by_id(hf_id)
    if found.path is not None:
        assert found.commit is not None
        cached = f"{hf_id}: config.json from the Hugging Face cache, commit {found.commit[:12]}"
        return _load_file(
            found.path, name=hf_id.repo, kind="hf-cache", served=served, assumptions=[cached], weight_dtype=weight_dtype
        )
    cache = hub_cache()
    preset = preset_for_id(hf_id.repo)
    if preset is not None:
        why = (
            f"{hf_id} is not in the Hugging Face cache ({found.missing} in {shown_path(cache.folder)}): priced as"
            f" preset {preset}"
        )
        if preset in TOWER_LEFT_OUT:
            why += f"{_tower_left_out(preset)}; `{hf_id.download_command()}` and `mha kv` on the config.json count them"
        return _preset(str(hf_id), preset, served, why)
    from mha_cli.core.shipped_configs import shipped_config

    shipped = shipped_config(hf_id.repo)
    if shipped is not None and hf_id.revision in (None, "main"):  # another revision names another file
        path, read_from = shipped
        why = (
            f"{hf_id} is not in the Hugging Face cache ({found.missing} in {shown_path(cache.folder)}): priced from the"
            f" published config.json mha ships (mha_cli/data/hf_configs/{path.name}, from {read_from})"
        )
        return _load_file(
            path, name=hf_id.repo, kind="hf-shipped", served=served, assumptions=[why], weight_dtype=weight_dtype
        )
    raise BadInputError(
        f"{one_line(str(hf_id), 100)} is not in the Hugging Face cache: {found.missing} in"
        f" {shown_path(cache.folder)} ({cache.chosen_by}). Get its config with `{hf_id.download_command()}`, or give"
        f" a config.json or model folder; nothing is downloaded{_listed_id_hint(hf_id.repo)}"
    )


def _listed_id_hint(repo: str) -> str:
    """``; did you mean openai/gpt-oss-20b (listed: ...)?`` for an id one slip from a listed one (its name part
    matched as a model name is: the same sizes and versions, ``core.suggest``), else nothing (trial 358 #4)."""
    name = repo.rsplit("/", 1)[-1]
    offered = did_you_mean_model(name, short_names(), otherwise="")
    if not offered.startswith("did you mean "):
        return ""
    listed, _, format_hint = offered.removeprefix("did you mean ").partition("?")  # "a, b? (in fp8: add ...)"
    ids = [found for found in (id_for_short_name(short) for short in listed.split(", ")) if found is not None]
    if not ids:
        return ""
    return f"; did you mean {', '.join(ids)} (listed: priced without a download)?{format_hint}"  # 364 #3


def _load_path(path: Path, weight_dtype: str | None = None) -> ModelSource:
    """A file, or a model folder (its config.json), that is there."""
    if is_folder(path):
        config = path / "config.json"
        if not _may_exist(config):
            raise BadInputError(
                f"{shown_path(path)} is a folder without a config.json: give a model folder (config.json beside its"
                " weights) or a config file"
            )
        path = config
    elif path.suffix.lower() == ".gguf":
        return _load_gguf(path)
    return _load_file(
        path, name=_hf_name(path), kind="hf-config", served=None, assumptions=[], weight_dtype=weight_dtype
    )


def _with_remote_code(served: ServedModel, config: dict) -> ServedModel:
    """``served``, saying why the engines load it only with ``--trust-remote-code`` where ``config`` says
    (``core.remote_code``)."""
    from mha_cli.core.remote_code import config_remote_code

    why = config_remote_code(config)
    return served if why is None else served.model_copy(update={"remote_code": why})


def _without_origin(refusal: BadInputError, path: Path) -> str:
    """A quantization reader's refusal without the file it names (and the field, ``text_config.quantization_config``,
    where it names one)."""
    prefix = re.match(rf"{re.escape(shown_path(path))}(?: \([\w.]+\))?: ", refusal.message)
    return refusal.message[prefix.end() :] if prefix else refusal.message


def _load_file(
    path: Path, *, name: str, kind: SourceKind, served: ServedModel | None, assumptions: list[str],
    weight_dtype: str | None = None,
) -> ModelSource:  # fmt: skip
    """A Hugging Face config.json (``kind``, the model called ``name``) or our config file at ``path``; ``served``
    None: from the file (``served_model.from_config``)."""
    # The file readers are imported here: a preset (the common case, and every `--json` test run) never pays for them.
    from mha_cli.core.config_io import duplicate_key_refusal, parse_config, read_mapping_noting_duplicates
    from mha_cli.core.hf_import import looks_like_hf_config
    from mha_cli.core.hf_quantization import declared_kv_cache, read_checkpoint_weights
    from mha_cli.core.mtp_layers import declared_mtp_layers
    from mha_cli.core.recommend.hf_config import HF_NOTES_KEY

    data, twice = read_mapping_noting_duplicates(path)  # says why a path that is there cannot be read
    if looks_like_hf_config(data):  # a key given twice: the last, as transformers' json.load keeps it, said
        from mha_cli.core.quoted_booleans import refuse_quoted_booleans

        quantised = _with_modelopt_sidecar(data, path)  # read once: the weights and the KV format both come from it
        refuse_quoted_booleans(quantised, shown_path(path))
        imported = _import_untrusted(data, path, name)
        written_notes = data.get(HF_NOTES_KEY)  # recommend --format hf's notes (an explicit --variant)
        repeated = (
            []
            if twice is None
            else [  # trial 304 #11: the figure moved with no line
                f"key {twice!r} is given twice in one object of {shown_path(path)}: its last value is read, as"
                " transformers' json.load reads it"
            ]
        )
        source = ModelSource(
            kind=kind, origin=str(path), model=imported.model,
            assumptions=[*assumptions, *repeated, *imported.assumptions], read_as=repeated,
            notes=[note for note in written_notes if isinstance(note, str)] if isinstance(written_notes, list) else [],
            served=_with_remote_code(from_config(path, quantised) if served is None else served, data),
        )  # fmt: skip
        try:
            stored = read_checkpoint_weights(quantised, shown_path(path))
        except BadInputError as refusal:  # a quantization_config mha cannot price: --weight-dtype prices it instead
            if weight_dtype is None or isinstance(weight_dtype, PastedQuantization):
                raise  # vLLM's --quantization names the checkpoint's method, not a format over it (review 329 #4)
            stored = None
            what = refusal.what if isinstance(refusal, UnpricedQuantizationError) else _without_origin(refusal, path)
            unread = f"quantization_config not read ({what}): every weight priced in {weight_dtype} (--weight-dtype)"
            source = _unread(source, quantised, unread)
        sidecar = path.parent / "hf_quant_config.json"
        if "quantization_config" in data and sidecar.is_file():  # two declarations: vLLM reads config.json's
            kept = "config.json's quantization_config priced, as vLLM reads it (the sidecar only where config.json has none)"
            source = source.model_copy(
                update={"assumptions": [*source.assumptions, f"hf_quant_config.json not read: {kept}"]}
            )
        source = _with_checkpoint_weights(source, stored, shown_path(path), declared_mtp_layers(data), weight_dtype)
        source = _with_declared_kv(source, declared_kv_cache(quantised, shown_path(path)))
        fallback = _dtype_read(data, shown_path(path), weight_dtype)
        if fallback is not None:
            source = source.model_copy(update={"assumptions": [*source.assumptions, fallback]})
        source = _with_float16_checkpoint(source, data)
        return _with_header_weights(source, path, data) if path.name == "config.json" else source
    if path.name == "config.json" and "model" not in data and "d_model" not in data:  # neither format's keys
        raise BadInputError(
            f"{shown_path(path)}: a config.json without model_type, architectures or hidden_size (nor mha's own"
            f" model:): {'it is empty' if not data else 'not a model config'}; give a Hugging Face config.json"
        )
    if "model" not in data and "d_model" in data:  # a bare model spec; its schema_version, if any, is the file's
        wrapped = {"model": dict(data)}
        if "schema_version" in data:
            wrapped["schema_version"] = wrapped["model"].pop("schema_version")
        data = wrapped
    if twice is not None:  # our own format: a key given twice is refused, in JSON as in YAML
        raise duplicate_key_refusal(path, twice)
    config = parse_config(data, str(path))
    deployment = config.deployment
    if deployment is not None and deployment.target is not None:  # a target file is named from the config's folder
        from mha_cli.core.targets import rebase_target_file

        rebased = rebase_target_file(deployment.target, path.parent, Path.cwd())
        deployment = deployment.model_copy(update={"target": rebased}) if rebased != deployment.target else deployment
    return ModelSource(
        kind="config", origin=str(path), model=config.model, deployment=deployment, notes=config.notes,
        served=placeholder(f"{path.name} is a config file, not a checkpoint") if served is None else served,
    )  # fmt: skip


def _load_gguf(path: Path) -> ModelSource:
    """A GGUF file: its metadata read as the config.json it was converted from (``core.gguf_import``)."""
    from mha_cli.core.gguf import read_gguf_header
    from mha_cli.core.gguf_import import gguf_config, gguf_tensor_kind, nearest_format, type_mix
    from mha_cli.core.header_weights import summed_weights

    header = read_gguf_header(path)
    data, assumptions = gguf_config(header, shown_path(path))
    imported = _import_untrusted(data, path, path.stem)
    fmt = nearest_format(header)
    deployment = DeploymentSpec(weight_dtype=fmt)
    tensors = ((gguf_tensor_kind(t.name), t.ggml_type.name, t.values, t.bytes) for t in header.tensors)
    weights = summed_weights(tensors, 1, imported.model, deployment)
    priced = (
        f"weights as the file stores them ({type_mix(header)}); shared over tensor-parallel ranks and read by the cost"
        f" model as {fmt}, the named format nearest its linear layers"
    )
    return ModelSource(
        kind="gguf", origin=str(path), model=imported.model,
        deployment=deployment.model_copy(update={"checkpoint_headers": weights}),
        assumptions=[*assumptions, *imported.assumptions, priced], served=from_gguf(path),
    )  # fmt: skip


def refuse_gguf_overrides(source: ModelSource, *, weight_dtype: str | None, engine: str | None) -> None:
    """A GGUF file is priced as the file stores it and served by vLLM's GGUF loader: another weight format, or
    another engine, is refused in one line."""
    if source.kind != "gguf":
        return
    if weight_dtype is not None:
        raise BadInputError(
            f"--weight-dtype {weight_dtype}: a GGUF file is priced as it stores its weights (and vLLM serves it so);"
            " leave the option out, or give the model's config.json to price another format"
        )
    if engine is not None and not str(engine).strip().lower().startswith("vllm"):
        raise BadInputError(
            f"--engine {engine}: a GGUF file is priced for vLLM's GGUF loader; leave --engine out or give --engine vllm"
        )


def _with_declared_kv(source: ModelSource, declared: "DeclaredKv | None") -> ModelSource:
    """``source`` with the KV-cache format its checkpoint declares named among the assumptions, and kept on its
    deployment where the engines run it by themselves (``core.engine.checkpoint_kv``; ``merge_deployment`` prices
    it when --kv-dtype is not given)."""
    if declared is None:
        return source
    update: dict = {"assumptions": [*source.assumptions, declared.note]}
    if declared.engines_read:
        update["deployment"] = (source.deployment or DeploymentSpec()).model_copy(
            update={"checkpoint_kv_dtype": declared.format, "checkpoint_kv_method": declared.method}
        )
    return source.model_copy(update=update)


def checkpoint_dtype_name(config: dict) -> object:
    """The dtype a config.json names for its weights (``dtype``, transformers 5's key, or ``torch_dtype``; a
    multimodal config's ``text_config`` where the outer one names none), as written; None where none is named."""
    for part in (config, config.get("text_config")):
        if isinstance(part, dict):
            for key in ("dtype", "torch_dtype"):
                if part.get(key) is not None:
                    return part[key]
    return None


FLOAT16_CHECKPOINT = (
    "dtype float16 (config.json): vLLM and SGLang run the model in fp16 (`--dtype auto` keeps a float16"
    " checkpoint's dtype: vLLM 0.32.0 vllm/config/model.py _resolve_auto_dtype), so its unquantized weights and its KV"
    " cache are priced as fp16 where --weight-dtype and --kv-dtype do not say otherwise: the same 2 bytes a value as"
    " bf16"
)
"""The assumption ``_with_float16_checkpoint`` adds."""
FLOAT32_CHECKPOINT = (
    "dtype float32 (config.json): vLLM's `--dtype auto` runs a float32 checkpoint in its device's first 16-bit dtype"
    " (bf16; fp16 where there is none: vLLM 0.32.0 _resolve_auto_dtype), so it is priced in bf16, half its stored"
    " bytes; --weight-dtype fp32 prices it as stored"
)
"""The assumption ``_with_float16_checkpoint`` adds for a float32 config."""


READ_DTYPES = ("bfloat16", "float16", "half", "float32", "float")
"""The config.json dtypes mha prices as named (vLLM's ``_STR_DTYPE_TO_TORCH_DTYPE`` names, vllm/config/model.py
0.32.0)."""
FALLBACK_DTYPES = (
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    "float64", "double",
)  # fmt: skip
"""torch dtypes a config.json may name (fp8 checkpoints: RedHatAI's Llama-4-Scout-FP8-dynamic says float8_e4m3fn)
that vLLM does not run a model in: ``_resolve_auto_dtype`` falls back to its device's first supported dtype, bf16
("Your device ... doesn't support ... Falling back"), as the unquantised weights are priced."""
FALLBACK_NOTE = (
    "dtype {named} (config.json): vLLM runs the model in its device's first 16-bit dtype instead (bf16:"
    " _resolve_auto_dtype's fallback, vLLM 0.32.0), so the unquantised weights are priced in bf16"
)


def _dtype_read(config: dict, origin: str, weight_dtype: str | None) -> str | None:
    """The assumption for a config.json dtype vLLM falls back from (``FALLBACK_DTYPES``), or None; a name that is no
    torch dtype ("float8", a typo) is refused in one line, as it would be priced as bf16 with no word, unless
    --weight-dtype says what to price."""
    named = checkpoint_dtype_name(config)
    if named is None or (isinstance(named, str) and named in READ_DTYPES):
        return None
    if isinstance(named, str) and named in FALLBACK_DTYPES:
        return FALLBACK_NOTE.format(named=named)
    if weight_dtype is not None:
        return None
    raise BadInputError(
        f"{origin}: dtype {named!r} (config.json) is not a torch dtype mha reads ({', '.join(READ_DTYPES)}, or"
        " a float8 name): it sets the unquantised weights' format; fix it in a copy of the file, or give"
        " --weight-dtype"
    )


def _with_float16_checkpoint(source: ModelSource, config: dict) -> ModelSource:
    """``source`` priced in fp16 where its config.json names float16 weights: the bf16 defaults of its weights and
    KV cache become fp16 (the same bytes; an fp16-only device, V100 or T4, runs it as stored), a checkpoint's
    quantized format or declared fp8 cache kept; --weight-dtype and --kv-dtype still override them."""
    if checkpoint_dtype_name(config) in ("float32", "float"):  # priced as the bf16 default: said, not silent
        return source.model_copy(update={"assumptions": [*source.assumptions, FLOAT32_CHECKPOINT]})
    if checkpoint_dtype_name(config) not in ("float16", "half") or config.get("model_type") in FLOAT16_REFUSED:
        return source
    deployment = source.deployment or DeploymentSpec()
    update: dict[str, str] = {}
    if deployment.weight_dtype == "bf16":
        update["weight_dtype"] = "fp16"
    if deployment.kv_dtype == "bf16" and deployment.checkpoint_kv_dtype is None:
        update["kv_dtype"] = "fp16"
    if not update:
        return source
    return source.model_copy(
        update={"deployment": deployment.model_copy(update=update), "assumptions": [*source.assumptions,
                                                                                      FLOAT16_CHECKPOINT]}
    )  # fmt: skip


def _unread(source: ModelSource, config: Any, said: str, method: str | None = None) -> ModelSource:
    """``source`` whose quantization_config (of ``config``, or ``method``) was not read, ``--weight-dtype`` pricing
    every weight instead: ``said`` among its assumptions, and the config's ``quant_method`` kept as
    ``DeploymentSpec.checkpoint_unread`` for the launch lines (review 353 #2)."""
    if method is None:
        from mha_cli.core.hf_quantization import quantization_config

        quant, _ = quantization_config(config, "config.json")
        method = str(quant.get("quant_method", "unknown")) if isinstance(quant, dict) else "unknown"
    deployment = (source.deployment or DeploymentSpec()).model_copy(update={"checkpoint_unread": method})
    return source.model_copy(update={"assumptions": [*source.assumptions, said], "deployment": deployment})


def _with_checkpoint_format(source: ModelSource, stored_as: str | None) -> ModelSource:
    """``source`` priced in the format its checkpoint stores (``--weight-dtype`` still overrides it)."""
    if stored_as is None:
        return source
    return source.model_copy(
        update={
            "deployment": DeploymentSpec(weight_dtype=stored_as, checkpoint_format=stored_as),
            "assumptions": [
                *source.assumptions,
                f"weights as the checkpoint stores them: {stored_as} (quantization_config)",
            ],
        }
    )


def _with_checkpoint_weights(
    source: ModelSource, stored: "CheckpointWeights | None", origin: str, mtp_layers: int, weight_dtype: str | None
) -> ModelSource:
    """``source`` priced as its checkpoint stores it: a named format, or tensor by tensor by its scheme, with the
    config's patterns that name none of the model's modules said (``--weight-dtype`` still overrides it). An entry
    naming a decoder layer mha cannot find is refused (``core.layer_entries``), or with ``weight_dtype`` the config
    is not read. ``mtp_layers``: the MTP layers its config.json declares."""
    if stored is not None and stored.format == "mxfp4" and source.model.block.moe is None and weight_dtype is None:
        raise BadInputError(  # the named format's own refusal would blame a --weight-dtype never typed
            f"{origin}: quantization_config quant_method mxfp4 quantises routed experts (vLLM's Mxfp4Config) and"
            f" {source.model.name} has none: an MXFP4 dense checkpoint is AMD Quark's (quant_method quark), or give"
            " --weight-dtype mxfp4-linear to price MXFP4 on every linear layer"
        )
    if stored is None or stored.scheme is None:
        named = _with_checkpoint_format(source, None if stored is None else stored.format)
        if stored is None or stored.note is None:
            return named
        return named.model_copy(update={"assumptions": [*named.assumptions, stored.note]})
    from mha_cli.core.checkpoint_names import module_names
    from mha_cli.core.layer_entries import unfound_layer_entry
    from mha_cli.core.named_exclusions import NAMED_METHODS, excludes_nothing, refuse_split_shards, shown
    from mha_cli.core.weight_bytes import model_modules

    scheme = stored.scheme
    names = module_names(source.model)
    unmatched = scheme.unmatched(model_modules(source.model), names)
    refusal = unfound_layer_entry(source.model, scheme, unmatched, names, mtp_layers, origin)
    if refusal is not None and weight_dtype is None:
        raise refusal
    if refusal is not None:
        unread = (
            f"quantization_config not read ({refusal.what}): every weight priced in {weight_dtype} (--weight-dtype)"
        )
        return _unread(source, None, unread, scheme.quant_method)
    refuse_split_shards(source.model, scheme)
    if scheme.method in NAMED_METHODS and excludes_nothing(source.model, scheme):
        named = _with_checkpoint_format(source, scheme.format)
        if not scheme.ignore:  # fbgemm fp8 with no list and no routed experts: the named format itself
            return named
        note = (f"quantization_config keeps in bf16 ({shown(scheme.ignore) or 'its listed modules'}) only what"
                f" {scheme.format} leaves there anyway: priced as the named format")  # fmt: skip
        return named.model_copy(update={"assumptions": [*named.assumptions, note]})
    notes = [f"weights as the checkpoint stores them: {scheme.format} (quantization_config), tensor by tensor:"
             f" {scheme.describe()}"]  # fmt: skip
    tower = _tower_entries(source.model, scheme, unmatched)
    if tower:  # they name the vision tower, which is priced in bf16 whatever the scheme says
        unmatched = [entry for entry in unmatched if entry not in tower]
        notes.append(
            f"quantization_config names the vision tower ({shown(tower)}): the tower is priced in bf16 whatever the"
            " scheme says (core.vision_tower), so those entries change no figure"
        )
    absent = _absent_tower_entries(source.model, unmatched)
    if absent:  # trial 375 #6: the checkpoint has a tower this config does not describe; "has none of" misled
        unmatched = [entry for entry in unmatched if entry not in absent]
        notes.append(
            f"quantization_config names a vision or audio tower or its projector ({shown(absent)}) that this config does not"
            " describe (no vision_config): not counted, so those entries change nothing"
        )
    if unmatched:
        notes.append(
            f"quantization_config names modules {source.model.name} has none of, as its checkpoint and vLLM name"
            f" them (core.checkpoint_names; mha's Llama-style names elsewhere): {shown(unmatched)}; those entries"
            " change nothing"
        )
    return source.model_copy(
        update={
            "deployment": DeploymentSpec(
                weight_dtype=scheme.format, weight_scheme=scheme, checkpoint_format=scheme.format
            ),
            "assumptions": [*source.assumptions, *notes],
        }
    )


def _tower_entries(model: ModelSpec, scheme: "WeightScheme", entries: list[str]) -> list[str]:
    """Those of ``entries`` (a quantization_config's entries that name no decoder module) that name ``model``'s
    vision tower as its checkpoints spell it (transformers' ``model.visual...`` and the older ``visual...``)."""
    if model.vision is None or not entries:
        return []
    from mha_cli.core.vision_tower import tower_tensors

    modules = {tensor.name.rsplit(".", 1)[0] for tensor in tower_tensors(model.vision)}
    spelled = modules | {name.removeprefix("model.") for name in modules}
    return scheme.naming(entries, spelled)


def _absent_tower_entries(model: ModelSpec, entries: list[str]) -> list[str]:
    """Those of ``entries`` that name a vision or audio tower or its projector (``checkpoint_headers``' tower
    pattern) where ``model`` has none described."""
    if model.vision is not None:
        return []
    from mha_cli.core.checkpoint_headers import names_a_tower

    return [entry for entry in entries if names_a_tower(entry)]


def _with_header_weights(source: ModelSource, config: Path, data: dict) -> ModelSource:
    """``source`` with its checkpoint's safetensors headers (beside ``config``, whose contents are ``data``) pricing
    its weights, when they are there (``core.header_weights``)."""
    from mha_cli.core.header_weights import checkpoint_layers, read_header_weights

    layers = checkpoint_layers(data, source.model)
    read = read_header_weights(config.parent, source.model, source.deployment, layers)
    update: dict[str, object] = {"assumptions": [*source.assumptions, *read.notes]}
    if read.weights is not None:
        base = source.deployment or DeploymentSpec()
        update["deployment"] = base.model_copy(update={"checkpoint_headers": read.weights})
    return source.model_copy(update=update)


def _with_modelopt_sidecar(data: dict, path: Path) -> dict:
    """``data`` with the ``hf_quant_config.json`` beside it as its quantization_config, when it has none (a ModelOpt
    checkpoint, which vLLM reads the same way)."""
    sidecar = path.parent / "hf_quant_config.json"
    if "quantization_config" in data or not sidecar.is_file():
        return data
    from mha_cli.core.config_io import read_mapping_noting_duplicates

    return {**data, "quantization_config": read_mapping_noting_duplicates(sidecar)[0]}  # Hugging Face's: the last


def _import_untrusted(data: dict, path: Path, name: str) -> "ImportedModel":
    """``import_hf_config`` on a file from anywhere: a field of an unexpected type or shape (a string where a list
    of layer types belongs, a list where a count does) is bad input, one line, whatever reader trips on it."""
    from mha_cli.core.hf_import import import_hf_config

    try:
        return import_hf_config(data, name=name, origin=str(path))
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
