"""A checkpoint's safetensors headers, read: every tensor's name, dtype, shape and bytes, no tensor loaded.

A safetensors file (the format's specification, huggingface/safetensors' README) is an 8-byte little-endian header
length N, N bytes of UTF-8 JSON, then the tensors' bytes:

    {"model.embed_tokens.weight": {"dtype": "BF16", "shape": [128256, 4096], "data_offsets": [0, 1050673152]},
     ..., "__metadata__": {"format": "pt"}}

Only the header is read, at most ``MAX_HEADER_BYTES`` (safetensors' own limit); a file that is not one (too short, a
length past its end or the limit, JSON that is not such a table, an unknown dtype, a span that does not hold its
shape) is refused in one line. A tensor's bytes are its ``data_offsets`` span, which must be what its shape and dtype
need (``DTYPE_BITS``; FP4 values two to a byte).

The files of a checkpoint are those its ``model.safetensors.index.json`` maps tensors to (a folder with a
consolidated copy beside the shards, as Mistral's hold, is counted once), else every ``*.safetensors`` in it but a
PEFT adapter's (``ADAPTER_FILES``); files
the index names, or shards their siblings' names count (``model-00002-of-00004.safetensors``), that are not there
are reported as missing (``core.header_weights`` then prices the weights from the config).

Each tensor is of one kind, by its name in Hugging Face's naming (``KIND_PATTERNS``, one table, the first pattern that
matches wins): quantisation scales, zero points and group indices are their own kind (``scales``); decoder layers
(not a vision tower's) numbered past the config's ``num_hidden_layers`` are multi-token-prediction layers (``mtp``), which vLLM loads only for
speculative decoding (its DeepSeek, GLM-4.5 and Qwen3-Next loaders skip them), so they are kept out of the total an
engine holds, as is a saved rotary ``inv_freq`` buffer, which engines compute. Pure Python: json and the file.
"""

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from pydantic import ConfigDict

from mha_cli.core.errors import BadInputError, one_line, shown_path
from mha_cli.core.record import Record
from mha_cli.core.weight_formats import WeightFormatName

MAX_HEADER_BYTES = 100_000_000
"""The longest header read: safetensors' own ``MAX_HEADER_SIZE`` (a longer one is refused as it refuses it)."""
INDEX_FILE = "model.safetensors.index.json"
METADATA = "__metadata__"

DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F8_E8M0": 8,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64, "C64": 64,
}  # fmt: skip
"""Bits of one element of each safetensors dtype (its ``Dtype`` enum). Packed formats store their own: NVFP4's values
as U8 (two to a byte), AWQ's as I32 (eight to a word)."""
FLOAT_DTYPES = frozenset({"F16", "BF16", "F32", "F64"})
"""Floating dtypes an engine casts to its parameter's dtype on loading (the model's: bf16 for a quantised
checkpoint's unquantised weights); a quantisation scale keeps the dtype its method creates, the file's."""

KIND_PATTERNS: tuple[tuple[str, str], ...] = (
    ("vision_tower", r"(?:^|\.)(?:vision_tower|vision_model|visual|vision_encoder|multi_modal_projector"
                     r"|mm_projector|image_newline|audio_tower|audio_model|embed_vision|embed_audio)(?:\.|$)"),
    ("mtp", r"(?:^|\.)mtp(?:[._]|$)"),
    ("scales", r"(?:_scale|_scale_inv|_scale_2|_global_scale|_zero_point|_g_idx|_shape|_scales|\.scales|\.qzeros"
               r"|\.g_idx|\.absmax|\.nested_absmax|\.quant_map|\.nested_quant_map|\.quant_state\.[\w.]+|\.SCB)$"),
    ("rotary", r"rotary_emb\.inv_freq$"),
    ("experts", r"\.experts\."),
    ("shared_experts", r"\.shared_experts?\."),
    ("router", r"\.(?:gate|router|shared_expert_gate)\.|\.e_score_correction_bias$"),
    ("mixer", r"(?:^|\.)(?:mamba|linear_attn|short_conv|conv)\.|\.mixer\.(?:in_proj|conv1d|A_log|D|dt_bias"
              r"|norm|out_proj)(?:\.|$)|\.(?:A_log|dt_bias)$"),
    ("per_layer_input", r"per_layer_(?:input_gate|projection|model_projection)\."),
    ("norms", r"norm|(?:^|\.)ln_\w*\."),
    ("attention", r"attn|attention|\.(?:q|k|v|o|qkv|q_a|q_b|kv_a|kv_b)_proj|kv_a_proj_with_mqa|\.sinks$"
                  r"|\.indexer\."),
    ("mlp", r"mlp|feed_forward|ffn|\.(?:gate|up|down|gate_up)_proj\.|\.(?:fc1|fc2|c_fc|w1|w2|w3)\."),
    ("head", r"(?:^|\.)(?:lm_head|output|embed_out)\."),
    ("embedding", r"embed|(?:^|\.)(?:wte|wpe|tok_embeddings)\."),
)  # fmt: skip
"""Tensor kinds by name, Hugging Face's naming (Llama, DeepSeek, Qwen, Mixtral, gpt-oss, Nemotron-H, GPT-2 and the
vision-language models' towers), as regular expressions searched in the name; a name none matches is ``other``.
Compiled on first use (``_compiled_kinds``): importing the module, which every command does, compiles none."""
NOT_LOADED = {
    "mtp": "multi-token-prediction layers, or layers past the config's num_hidden_layers (vLLM loads MTP layers only"
    " with --speculative-config)",
    "rotary": "saved rotary inv_freq buffers (engines compute them)",
    "tied_head": "an LM head the config ties to the embedding (vLLM's loaders skip lm_head.* then)",
}
"""Kinds an engine serving the model does not hold (vLLM loads MTP layers only with --speculative-config)."""
KIND_NAMES = {
    "embedding": "embedding", "attention": "attention", "mlp": "MLP", "experts": "routed experts",
    "shared_experts": "shared experts", "router": "routers", "mixer": "fixed-state mixers", "norms": "norms",
    "head": "LM head", "vision_tower": "vision/audio tower", "scales": "scales and zero points",
    "mtp": "MTP layers", "rotary": "rotary buffers", "per_layer_input": "per-layer input projections",
    "other": "other",
}  # fmt: skip
"""Each kind in words, for notes and tables."""
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


class HeaderTensor(NamedTuple):
    """One tensor of a header: its name, safetensors dtype, shape and the bytes it takes in the file."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def tensor_kind(name: str, n_layers: int) -> str:
    """The kind of the tensor called ``name`` (``KIND_PATTERNS``, in order) in a checkpoint of ``n_layers`` decoder
    layers; outside a vision tower, a tensor of a layer numbered ``n_layers`` or more is ``mtp``."""
    kind = _kind_by_name(_INDEX.sub("0", name))  # layers and experts alike: a 61-layer, 256-expert model, 20 names
    if kind != "vision_tower" and (layer := _LAYER.search(name)) is not None and int(layer.group(1)) >= n_layers:
        return "mtp"
    return kind


_INDEX = re.compile(r"(?<=\.)\d+(?=\.)")
"""A layer's or an expert's number between dots."""


@lru_cache(maxsize=1)
def _compiled_kinds() -> tuple[tuple[str, "re.Pattern[str]"], ...]:
    return tuple((kind, re.compile(pattern)) for kind, pattern in KIND_PATTERNS)


@lru_cache(maxsize=4096)
def _kind_by_name(name: str) -> str:
    return next((kind for kind, pattern in _compiled_kinds() if pattern.search(name)), "other")


def names_a_tower(entry: str) -> bool:
    """Whether a module name or pattern (``vision_tower*``, ``re:.*mm_projector.*``) names a vision or audio tower or
    its projector, as ``KIND_PATTERNS``' ``vision_tower`` kind reads tensor names."""
    pattern = dict(_compiled_kinds())["vision_tower"]
    return pattern.search(entry.removeprefix("re:").replace("*", ".")) is not None


def _refuse(path: Path, why: str) -> BadInputError:
    return BadInputError(
        f"{shown_path(path)} is not a readable safetensors file ({why}): download it again, or move it out of the"
        " model folder to price the weights from the config"
    )


def read_header(path: Path) -> list[HeaderTensor]:
    """The tensors ``path``'s safetensors header lists (``BadInputError`` in one line when it is not one)."""
    try:
        with path.open("rb") as file:
            size = path.stat().st_size
            prefix = file.read(8)
            if len(prefix) < 8:
                raise _refuse(path, f"{size} bytes, shorter than the 8-byte header length")
            length = int.from_bytes(prefix, "little")
            if length > MAX_HEADER_BYTES:
                raise _refuse(path, f"a header of {length:,} bytes, over safetensors' limit of {MAX_HEADER_BYTES:,}")
            if length > size - 8:
                raise _refuse(path, f"a header of {length:,} bytes in a file of {size:,}")
            text = file.read(length)
    except OSError as exc:
        raise BadInputError(f"{shown_path(path)} cannot be read ({exc.strerror or exc})") from None
    try:
        table = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _refuse(path, f"its header is not JSON: {one_line(str(exc), 80)}") from None
    if not isinstance(table, dict):
        raise _refuse(path, "its header is not a table of tensors")
    data_bytes = size - 8 - length
    return [_tensor(path, name, entry, data_bytes) for name, entry in table.items() if name != METADATA]


def _tensor(path: Path, name: str, entry: object, data_bytes: int) -> HeaderTensor:
    """One header entry, checked: a known dtype, a shape of sizes, a span inside the file that holds the shape."""

    def refuse(what: str) -> BadInputError:
        return _refuse(path, f"tensor {one_line(name, 80)} {what}")

    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise refuse("lacks dtype, shape or data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in DTYPE_BITS:
        raise refuse(f"has dtype {one_line(str(dtype), 20)}, not a safetensors dtype")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise refuse(f"has shape {one_line(str(shape), 40)}")
    if not (
        isinstance(offsets, list) and len(offsets) == 2 and all(type(n) is int for n in offsets)
        and 0 <= offsets[0] <= offsets[1] <= data_bytes
    ):  # fmt: skip
        raise refuse(f"has data_offsets {one_line(str(offsets), 40)} outside the file")
    tensor = HeaderTensor(name, dtype, tuple(shape), offsets[1] - offsets[0])
    needed = -(-tensor.numel * DTYPE_BITS[dtype] // 8)
    if needed != tensor.nbytes:
        raise refuse(f"spans {tensor.nbytes:,} bytes where its {dtype} shape needs {needed:,}")
    return tensor


class CheckpointFiles(NamedTuple):
    """The safetensors files of a model folder; ``missing``: files its index (or its shards' names) say it has that
    are not there."""

    files: list[Path]
    missing: list[str]


def checkpoint_files(folder: Path) -> CheckpointFiles:
    """The files ``folder``'s index maps tensors to, else every ``*.safetensors`` in it (none: an empty list)."""
    index = folder / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            names = sorted({str(name) for name in weight_map.values()})
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BadInputError(
                f"{shown_path(index)} has no readable weight_map ({exc.__class__.__name__}): download it again"
            ) from None
        if any(Path(name).is_absolute() or ".." in Path(name).parts for name in names):
            raise BadInputError(f"{shown_path(index)} maps tensors to files outside its folder")
        present = [name for name in names if (folder / name).is_file()]
        return CheckpointFiles([folder / name for name in present], [n for n in names if n not in present])
    files = sorted(p for p in folder.glob("*.safetensors") if p.is_file() and p.name not in ADAPTER_FILES)
    return CheckpointFiles(files, _missing_shards([p.name for p in files]))


ADAPTER_FILES = ("adapter_model.safetensors",)
"""PEFT's adapter file (``SAFETENSORS_WEIGHTS_NAME``, ``adapter_config.json`` beside it): LoRA tensors an engine loads
with ``--enable-lora``, not the model's weights; left out of a folder's files (a rank-256 adapter was counted as 36%
more weights: trial 266)."""


_SHARD = re.compile(r"(?P<stem>.*)-(?P<index>\d+)-of-(?P<count>\d+)\.safetensors")
"""A shard's name, ``model-00001-of-00004.safetensors`` (huggingface_hub's ``split_torch_state_dict_into_shards``)."""


def _missing_shards(names: list[str]) -> list[str]:
    """The shards that names like ``model-00002-of-00004.safetensors`` say exist but that are not among ``names``
    (a folder without its index, some shards not downloaded)."""
    missing = []
    for name in names:
        shard = _SHARD.fullmatch(name)
        if shard is None:
            continue
        width, count = len(shard["index"]), int(shard["count"])
        for index in range(1, count + 1):
            expected = f"{shard['stem']}-{index:0{width}d}-of-{shard['count']}.safetensors"
            if expected not in names and expected not in missing:
                missing.append(expected)
    return missing


class HeaderWeights(Record):
    """A checkpoint's weights as its safetensors headers hold them, beside the config's count: what prices the model's
    weights (``core.weight_bytes.deployment_rank_bytes``) while ``format`` is the weight format priced."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    format: WeightFormatName
    """The weight format they stand for: the checkpoint's, as its config says (bf16 without quantization_config)."""
    files: int
    """Safetensors files read."""
    tensors: int
    total_bytes: int
    """What an engine holds of them: every tensor but the ``NOT_LOADED`` kinds', in bytes; floating tensors other
    than scales at the width the engine holds them (``format``'s, bf16 beside a quantised format: an fp32 file served
    in bf16 holds 2 B a weight, as does a router a quantised checkpoint stores in fp32)."""
    by_dtype: dict[str, int]
    """Bytes of every tensor as the files store it, by safetensors dtype."""
    by_kind: dict[str, int]
    """``total_bytes`` by kind of tensor (``KIND_PATTERNS``), and the ``NOT_LOADED`` kinds' bytes as stored."""
    config_bytes: int
    """The whole model's weights in ``format`` as mha counts them from the config (the weight inventory, one device,
    the vocabulary unpadded)."""
    config_by_kind: dict[str, int]
    """``config_bytes`` by the same kinds."""

    def rank_bytes(self, counted: int) -> int:
        """A rank's weights: ``counted`` (its inventory count in ``format``) scaled from the config's whole count to
        the headers' total, rounded up; exactly ``total_bytes`` for the whole model on one device."""
        if self.config_bytes <= 0:
            return counted
        return -(-counted * self.total_bytes // self.config_bytes)
