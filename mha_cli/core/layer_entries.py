"""Quantization exclusion entries that name a decoder layer mha cannot find in the model: refused, not assumed.

A config's ``ignore`` (compressed-tensors), ``exclude_modules`` (ModelOpt), ``exclude`` (Quark) or a named format's
list that names none of the model's modules changes no figure (``WeightScheme.unmatched``, said in the assumptions).
That is right for what mha does not count (a vision or audio tower, an MTP layer, the LM head of a tied model) and
for a family whose modules inside a layer the checkpoint names otherwise than mha (Mixtral's
``model.layers.N.block_sparse_moe.gate``, Phi-3's fused ``qkv_proj``: mha spells layers Llama's way). It is wrong
where an entry names a decoder layer and mha misreads it: the weights it keeps in bf16 are then priced quantised,
the total short (NVIDIA's Kimi-K2.6 NVFP4 checkpoint, whose ``language_model.model.layers.N`` entries mha once did
not read, passed so 13.2 GB short). Such an entry is refused in one line (exit 2, as every quantization_config mha
cannot price; ``--weight-dtype`` then prices every weight in one format instead) when it names none of the model's
modules and

- names a layer past the decoder's layers and its MTP layers (``num_nextn_predict_layers``: DeepSeek's and GLM's
  checkpoints number their MTP layers on after the decoder's, ``model.layers.{num_hidden_layers}``), or
- spells the decoder with a root that is not the one the model's checkpoint (or, for a ``re:`` pattern, vLLM) uses
  for it (``core.checkpoint_names``), and not a prefix mha reads as it (``weight_scheme.TEXT_MODEL_PREFIXES``).

An entry names a decoder layer when it holds the component ``layers.N`` under one of ``DECODER_ROOTS``: a plain name
or a glob (``model.layers.3.mlp``, ``model.layers.12*``), or a ``re:`` pattern whose regex starts with the literal
root and ``layers\\.`` (``re:model\\.layers\\.3\\..*``; a regex starting ``.*`` may match a tower's layers and is not
judged). A tower's layers (``vision_tower.encoder.layers.N``), an MTP module (``mtp.layers.N``) and Nemotron-H's
blocks (``backbone.layers.B``, which are not mha's layers: core.weight_scheme) sit under other roots. Pure Python.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mha_cli.core.errors import UnpricedQuantizationError
from mha_cli.core.weight_scheme import read_text_model

if TYPE_CHECKING:
    from mha_cli.core.checkpoint_names import ModuleNames
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.weight_scheme import WeightScheme

DECODER_ROOTS = ("", "model.", "language_model.", "model.language_model.", "language_model.model.")
"""What precedes ``layers.N`` where an entry names the language model's decoder: mha's and Llama's ``model.``, a
bare ``layers.N`` (ModelOpt's and AWQ's entries match anywhere in a name), and the text-model roots of the
multimodal checkpoints mha reads (Gemma 4 and Qwen3.5's ``model.language_model.``, Kimi-K2.5's
``language_model.model.`` and vLLM 0.15.1's ``language_model.``: ``weight_scheme.TEXT_MODEL_PREFIXES``)."""

_PLAIN_LAYER = re.compile(r"(?:^|(?<=\.))layers\.(\d+)(?=[.*?\[]|\Z)")
_REGEX_LAYER = re.compile(r"\^?(?P<root>(?:[A-Za-z_]+\\?\.)*?)layers\\?\.(?P<index>\d+(?=\\?\.|\$|\Z))?")
SUBSTRING_METHODS = frozenset({"modelopt", "awq", "gptq"})
"""Methods whose plain entries match anywhere in a name (``weight_scheme.pattern_regex``): ``layers.N`` or
``model.layers.N`` spells the decoder as well as the whole root does."""


def decoder_layer(entry: str, names: ModuleNames) -> tuple[str, int | None] | None:
    """The decoder root and layer index ``entry`` names (index None: a regex over every layer), as mha reads it
    (``read_text_model``); None when it names no decoder layer."""
    read = read_text_model(entry, names)
    if read.startswith("re:"):
        found = _REGEX_LAYER.match(read[3:])
        if found is None:
            return None
        root = found.group("root").replace("\\.", ".")
        index = found.group("index")
        return (root, None if index is None else int(index)) if root in DECODER_ROOTS else None
    layer = _PLAIN_LAYER.search(read)
    if layer is None or read[: layer.start()] not in DECODER_ROOTS:
        return None
    return read[: layer.start()], int(layer.group(1))


def unfound_layer_entry(
    model: ModelSpec, scheme: WeightScheme, unmatched: list[str], names: ModuleNames, mtp_layers: int, origin: str
) -> UnpricedQuantizationError | None:
    """The refusal of the first exclusion entry among ``unmatched`` (entries naming none of ``model``'s modules)
    that names a decoder layer mha cannot find (see the module docstring); None when there is none."""
    n = model.n_layers
    for entry in (e for e in unmatched if e in scheme.ignore):
        found = decoder_layer(entry, names)
        if found is None:
            continue
        root, index = found
        regex = entry.startswith("re:")
        ours = names.engine_root if regex else names.checkpoint_root
        if index is not None and index >= n + mtp_layers:
            mtp = f" and {mtp_layers} MTP layer{'s' * (mtp_layers > 1)} after them" if mtp_layers else ", no MTP layers"
            what = f"entry {entry!r} names decoder layer {index}"
            return UnpricedQuantizationError(
                f"{origin}: quantization_config {what}, and {model.name} has {n} ({ours}layers.0 to"
                f" {ours}layers.{n - 1}{mtp}): mha expects an entry to name one of them as {_spelling(regex)} does"
                f" (such as {ours}layers.{n - 1}.mlp); correct the entry in a copy of the file, or give --weight-dtype"
                " to price every weight in one format",
                f"{what}, which {model.name} has not",
            )
        if index is not None and index >= n:  # an MTP layer, which mha does not count
            continue
        if root != ours and not (not regex and scheme.method in SUBSTRING_METHODS and ours.endswith(root)):
            layer = "N" if index is None else str(index)
            what = f"entry {entry!r} spells decoder layer {layer} '{root}layers.{layer}.'"
            return UnpricedQuantizationError(
                f"{origin}: quantization_config {what}, which names none of {model.name}'s modules: mha reads its"
                f" layers as {_spelling(regex)} names them, '{ours}layers.{layer}.' (core.checkpoint_names), and"
                " cannot tell what it keeps in bf16; correct the entry in a copy of the file, or give --weight-dtype"
                " to price every weight in one format",
                f"{what}, not '{ours}layers.{layer}.'",
            )
    return None


def _spelling(regex: bool) -> str:
    """Whose names an entry meets: vLLM's for a ``re:`` pattern, the checkpoint's otherwise."""
    return "vLLM" if regex else "the checkpoint"
