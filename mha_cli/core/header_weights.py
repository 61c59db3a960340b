"""A model folder's weights from its checkpoint's safetensors headers, against the config's count.

When a model folder (or a Hugging Face cache snapshot) holds its ``*.safetensors`` files, their headers
(``core.checkpoint_headers``) give the weights exactly: ``read_header_weights`` sums them by dtype and by kind and
sets them beside the config's count (``core.weight_bytes``, the weight inventory in the checkpoint's format). The
memory plan then prices each rank's weights as its share of the inventory scaled to the headers' total
(``HeaderWeights.rank_bytes``): the inventory says how tensor parallelism splits the weights, the headers how many
bytes there are. ``header_notes`` says so, and names a total that disagrees with the config's count by more than a
rounding (``disagrees``) with the kind that differs most. Pure Python.
"""

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from mha_cli.core.checkpoint_headers import (
    FLOAT_DTYPES,
    KIND_NAMES,
    NOT_LOADED,
    HeaderTensor,
    HeaderWeights,
    checkpoint_files,
    read_header,
    tensor_kind,
)
from mha_cli.core.quantities import format_bytes
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.weight_bytes import UNQUANTISED_BYTES, model_bytes_by_kind, stored_headers
from mha_cli.core.weight_formats import weight_format

INVENTORY_KINDS = {
    "embedding": "embedding", "position": "embedding", "token_type": "embedding", "embedding_projection": "embedding",
    "embedding_norm": "norms", "attention": "attention", "attention_gate": "attention", "sink": "attention",
    "indexer": "attention", "qk_norm": "norms", "latent": "norms", "norm": "norms", "moe_norm": "norms",
    "mlp": "mlp", "activation": "mlp", "router": "router", "expert": "experts", "shared_expert": "shared_experts",
    "mixer": "mixer", "head": "head", "head_transform": "head", "scales": "scales", "vision": "vision_tower",
    "per_layer_embedding": "embedding", "per_layer_input": "per_layer_input",
}  # fmt: skip
"""The weight inventory's kinds of tensor (``core.inventory.TensorKind``, and ``weight_bytes.SCALES``) as the
headers' kinds (``checkpoint_headers.KIND_PATTERNS``)."""
SHARE_OF_TOTAL = 0.01
"""A header total further than this share from the config's count disagrees with it (more than a rounding)."""


class HeaderRead(NamedTuple):
    """What a model folder's headers gave: the weights (None without safetensors files, or with some missing) and
    what to tell about them at load time."""

    weights: HeaderWeights | None
    notes: list[str]


def checkpoint_layers(config: dict, model: ModelSpec) -> int:
    """The decoder layers the checkpoint numbers (``num_hidden_layers``, or its text model's): past them a layer is
    an MTP layer. Not always ``model.n_layers``: Nemotron-H's 52 blocks are 29 layers of mha's."""
    for section in (config, config.get("text_config"), config.get("llm_config")):
        if isinstance(section, dict) and type(section.get("num_hidden_layers")) is int:
            return section["num_hidden_layers"]
    return model.n_layers


def read_header_weights(
    folder: Path, model: ModelSpec, deployment: DeploymentSpec | None, n_layers: int | None = None
) -> HeaderRead:
    """``folder``'s checkpoint headers summed, for ``model`` priced in ``deployment``'s weight format (as the
    checkpoint stores it: its scheme, else its named format, else bf16), the checkpoint numbering ``n_layers``
    decoder layers (default ``model.n_layers``); nothing without ``*.safetensors`` files, a note when some of its
    files are not there."""
    found = checkpoint_files(folder)
    if found.missing:
        shown = ", ".join(found.missing[:2]) + (f" and {len(found.missing) - 2} more" if len(found.missing) > 2 else "")
        return HeaderRead(None, [
            f"weights from the config, not the checkpoint headers: {len(found.missing)} of its"
            f" {len(found.missing) + len(found.files)} safetensors files are not in {folder.name} ({shown})"
        ])  # fmt: skip
    if not found.files:
        return HeaderRead(None, [])
    layers = model.n_layers if n_layers is None else n_layers
    kinds = [
        (tensor_kind(tensor.name, layers), tensor.name, tensor.dtype, tensor.numel, tensor.nbytes)
        for tensor in _each_name_once(found.files)
    ]
    has_embedding = any(kind == "embedding" for kind, *_ in kinds)
    tensors = (
        (_tied_head(kind, name, model, has_embedding), dtype, numel, nbytes)
        for kind, name, dtype, numel, nbytes in kinds
    )
    summed = summed_weights(tensors, len(found.files), model, deployment)
    if summed.total_bytes == 0:  # a header alone, or only what no engine loads: not a checkpoint to price by
        return HeaderRead(None, [
            f"weights from the config, not the checkpoint headers: its safetensors files hold no tensor an engine"
            f" loads ({summed.tensors:,} in all)"
        ])  # fmt: skip
    return HeaderRead(summed, [])


_TOP_LEVEL_HEAD = re.compile(r"^(?:[A-Za-z_]+\.)*(?:lm_head|output|embed_out)\.weight$")
"""The model's own output head (``lm_head.weight``, ``model.output.weight``), not a layer's ``...layer.3.output.dense``
that the same kind's pattern also matches (BERT's per-layer down-projection): no layer index in the name."""


def _tied_head(kind: str, name: str, model: ModelSpec, has_embedding: bool) -> str:
    """``tied_head`` (not loaded) for the output head of a tied config whose checkpoint also stores the embedding:
    vLLM's loaders skip ``lm_head.*`` then (``skip_prefixes``); ``kind`` otherwise, a head stored in place of the
    embedding included (it is the one tensor the tie reads)."""
    if kind == "head" and model.embeddings.tied and has_embedding and _TOP_LEVEL_HEAD.match(name):
        return "tied_head"
    return kind


def _each_name_once(files: list[Path]) -> Iterator[HeaderTensor]:
    """Every tensor of ``files``, a name stored in two shards once, its last copy: the engine's parameter is one
    tensor however many files write it, and the later load overwrites it."""
    last: dict[str, HeaderTensor] = {}
    for path in files:
        for tensor in read_header(path):
            last.pop(tensor.name, None)  # re-inserted: the order of the last copies
            last[tensor.name] = tensor
    yield from last.values()


def summed_weights(
    tensors: Iterable[tuple[str, str, int, int]], files: int, model: ModelSpec, deployment: DeploymentSpec | None
) -> HeaderWeights:
    """A checkpoint's tensors, each (kind, stored dtype, values, bytes), summed for ``model`` priced in
    ``deployment``'s weight format: floating tensors at the width the engine holds them, the ``NOT_LOADED`` kinds
    apart, beside the config's count by the same kinds."""
    fmt = (deployment or DeploymentSpec()).weight_dtype
    served = weight_format(fmt)
    held_width = int(served.nominal_bits) // 8 if served.scope == "all" else UNQUANTISED_BYTES
    by_dtype: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    count = total = 0
    for kind, dtype, numel, nbytes in tensors:
        count += 1
        by_dtype[dtype] = by_dtype.get(dtype, 0) + nbytes
        held = nbytes
        if dtype in FLOAT_DTYPES and kind not in NOT_LOADED and kind != "scales":
            held = numel * held_width  # the engine's parameter, whatever the file stores
        by_kind[kind] = by_kind.get(kind, 0) + held
        total += 0 if kind in NOT_LOADED else held
    config_by_kind: dict[str, int] = {}
    for kind, config_count in model_bytes_by_kind(model, fmt, deployment).items():
        header_kind = INVENTORY_KINDS[kind]
        config_by_kind[header_kind] = config_by_kind.get(header_kind, 0) + config_count
    return HeaderWeights(
        format=fmt, files=files, tensors=count, total_bytes=total, by_dtype=by_dtype, by_kind=by_kind,
        config_bytes=sum(config_by_kind.values()), config_by_kind=config_by_kind,
    )  # fmt: skip


def embedding_bytes(model: ModelSpec) -> int:
    """One embedding's bytes in bf16 (vocabulary x width x 2): the other yardstick of a rounding."""
    return model.embeddings.vocab_size * (model.embeddings.width or model.d_model) * 2


def disagrees(weights: HeaderWeights, model: ModelSpec) -> bool:
    """Whether the headers' total is further from the config's count than a rounding: more than ``SHARE_OF_TOTAL``
    of it, or at least one embedding."""
    gap = abs(weights.total_bytes - weights.config_bytes)
    return gap > SHARE_OF_TOTAL * weights.config_bytes or gap >= embedding_bytes(model)


def biggest_difference(weights: HeaderWeights) -> str:
    """The kind whose header bytes differ most from the config's count (ties: the first in ``KIND_NAMES``)."""
    kinds = [k for k in KIND_NAMES if k not in NOT_LOADED and (k in weights.by_kind or k in weights.config_by_kind)]
    return max(kinds, key=lambda k: abs(weights.by_kind.get(k, 0) - weights.config_by_kind.get(k, 0)))


def header_notes(model: ModelSpec, deployment: DeploymentSpec) -> list[str]:
    """What a plan priced from ``deployment``'s checkpoint headers says: where its weights come from, what the
    headers hold that no engine loads, and a total that disagrees with the config's count. Empty when the headers
    do not price it (none read, or another ``--weight-dtype`` asked for)."""
    weights = stored_headers(deployment, deployment.weight_dtype)
    if weights is None:
        return []
    files = f"{weights.files} checkpoint header{'s' if weights.files != 1 else ''}"
    notes = [
        f"weights from {files}: {format_bytes(weights.total_bytes)} ({weights.total_bytes:,} B, {weights.format});"
        " per rank: the weight inventory's share of them under tensor parallelism"
    ]
    for kind, what in NOT_LOADED.items():
        if weights.by_kind.get(kind):
            notes.append(f"not counted: {format_bytes(weights.by_kind[kind])} of {what} in the headers")
    if disagrees(weights, model):
        kind = biggest_difference(weights)
        gap = weights.total_bytes / weights.config_bytes - 1 if weights.config_bytes else float("inf")
        notes.append(
            f"the checkpoint headers hold {format_bytes(weights.total_bytes)} of weights, the config's count in"
            f" {weights.format} is {format_bytes(weights.config_bytes)} ({gap:+.1%}); the kind that differs most:"
            f" {KIND_NAMES[kind]} ({format_bytes(weights.by_kind.get(kind, 0))} in the headers,"
            f" {format_bytes(weights.config_by_kind.get(kind, 0))} from the config); the plan uses the headers"
        )
    return notes
