"""A GGUF file's header: its metadata and its tensor table, read without reading the tensors' data.

The layout (ggml's ``docs/gguf.md``, versions 2 and 3, little-endian): the magic ``GGUF``, a uint32 version, the
uint64 tensor count, the uint64 metadata count; each metadata entry a key (a string: uint64 length, UTF-8 bytes), a
uint32 value type and the value (an array: uint32 element type, uint64 length, the elements); then each tensor's
name, uint32 dimension count, uint64 dimensions (the innermost first), uint32 ggml type and uint64 data offset.

A tensor's bytes follow from its type: ggml stores a type in blocks of ``block`` values of ``block_bytes`` bytes
(Q4_K: 256 values in 144 bytes), so a tensor of n values takes n / block x block_bytes. Pure Python; the file is
read up to the end of its tensor table only, in chunks, never more than ``MAX_HEADER_BYTES``.
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path
from typing import Any, NamedTuple

from mha_cli.core.errors import BadInputError, one_line, shown_path

MAGIC = b"GGUF"
VERSIONS = (2, 3)
MAX_HEADER_BYTES = 1 << 30
"""A header (metadata and tensor table) longer than this is refused: real ones, tokenizer included, take 1-20 MB."""
MAX_TENSORS = 1 << 20
MAX_ENTRIES = 1 << 20
KEPT_ARRAY_LENGTH = 4096
"""Arrays up to this length are kept whole; longer ones (a tokenizer's vocabulary) keep only their length."""
READ_CHUNK = 1 << 20


class GgmlType(NamedTuple):
    """How ggml stores one tensor type: ``block`` values in ``block_bytes`` bytes."""

    name: str
    block: int
    block_bytes: int

    @property
    def value_bits(self) -> int:
        """Bits of one quantised value (the rest of a block is its scales)."""
        return 8 * self.block_bytes // self.block if self.block == 1 else QUANT_BITS[self.name]


GGML_TYPES: dict[int, GgmlType] = {
    0: GgmlType("F32", 1, 4), 1: GgmlType("F16", 1, 2), 2: GgmlType("Q4_0", 32, 18), 3: GgmlType("Q4_1", 32, 20),
    6: GgmlType("Q5_0", 32, 22), 7: GgmlType("Q5_1", 32, 24), 8: GgmlType("Q8_0", 32, 34),
    10: GgmlType("Q2_K", 256, 84), 11: GgmlType("Q3_K", 256, 110), 12: GgmlType("Q4_K", 256, 144),
    13: GgmlType("Q5_K", 256, 176), 14: GgmlType("Q6_K", 256, 210), 16: GgmlType("IQ2_XXS", 256, 66),
    17: GgmlType("IQ2_XS", 256, 74), 18: GgmlType("IQ3_XXS", 256, 98), 19: GgmlType("IQ1_S", 256, 50),
    20: GgmlType("IQ4_NL", 32, 18), 21: GgmlType("IQ3_S", 256, 110), 22: GgmlType("IQ2_S", 256, 82),
    23: GgmlType("IQ4_XS", 256, 136), 24: GgmlType("I8", 1, 1), 25: GgmlType("I16", 1, 2), 26: GgmlType("I32", 1, 4),
    27: GgmlType("I64", 1, 8), 28: GgmlType("F64", 1, 8), 29: GgmlType("IQ1_M", 256, 56), 30: GgmlType("BF16", 1, 2),
    34: GgmlType("TQ1_0", 256, 54), 35: GgmlType("TQ2_0", 256, 66), 39: GgmlType("MXFP4", 32, 17),
    40: GgmlType("NVFP4", 64, 36),
}  # fmt: skip
"""The ggml types a GGUF file stores weights in (``ggml/src/ggml.c`` ``type_traits``: ``blck_size``,
``type_size``). Q8_1 and Q8_K are ggml's intermediate types for dot products, never stored: not listed."""

QUANT_BITS = {
    "Q4_0": 4, "Q4_1": 4, "Q5_0": 5, "Q5_1": 5, "Q8_0": 8, "Q2_K": 2, "Q3_K": 3, "Q4_K": 4, "Q5_K": 5, "Q6_K": 6,
    "IQ2_XXS": 2, "IQ2_XS": 2, "IQ3_XXS": 3, "IQ1_S": 1, "IQ4_NL": 4, "IQ3_S": 3, "IQ2_S": 2, "IQ4_XS": 4, "IQ1_M": 1,
    "TQ1_0": 1, "TQ2_0": 2, "MXFP4": 4, "NVFP4": 4,
}  # fmt: skip
"""The nominal bits of one value of each block-quantised type; the rest of its block is scales (and mins)."""

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
"""GGUF metadata value types of fixed size, as ``struct`` formats (8 is a string, 9 an array)."""
STRING, ARRAY = 8, 9


class GgufArray(NamedTuple):
    """A long metadata array (a tokenizer's vocabulary): its length only."""

    element_type: int
    length: int


class GgufTensor(NamedTuple):
    """One tensor of the table: its name, its shape (outermost first, as torch writes it), its type and bytes."""

    name: str
    shape: tuple[int, ...]
    ggml_type: GgmlType
    bytes: int
    offset: int = 0
    """Where its data starts, from the start of the data section (after the header, aligned)."""

    @property
    def values(self) -> int:
        return math.prod(self.shape)


class GgufHeader(NamedTuple):
    """A GGUF file's version, metadata (long arrays as ``GgufArray``) and tensor table."""

    version: int
    metadata: dict[str, Any]
    tensors: list[GgufTensor]

    @property
    def architecture(self) -> str | None:
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None

    def tensor_bytes(self) -> int:
        """Bytes of every tensor's data."""
        return sum(tensor.bytes for tensor in self.tensors)


class _Reader:
    """The file's bytes from the start, read in chunks as the parse needs them."""

    def __init__(self, path: Path, handle: Any) -> None:
        self.path, self.handle = path, handle
        self.data = bytearray()
        self.at = 0

    def need(self, count: int) -> None:
        end = self.at + count
        while len(self.data) < end:
            if end > MAX_HEADER_BYTES:
                raise BadInputError(
                    f"{shown_path(self.path)}: its GGUF header runs past {MAX_HEADER_BYTES >> 20} MiB: not a GGUF file"
                    " mha reads (a corrupt one?)"
                )
            chunk = self.handle.read(max(READ_CHUNK, end - len(self.data)))
            if not chunk:
                raise BadInputError(
                    f"{shown_path(self.path)}: the file ends inside its GGUF header (at byte {len(self.data):,}):"
                    " a truncated or corrupt download?"
                )
            self.data += chunk

    def scalar(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(size)
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return shortest_float32(value) if fmt == "<f" else value

    def string(self) -> str:
        length = self.scalar("<Q")
        self.need(length)
        raw = bytes(self.data[self.at : self.at + length])
        self.at += length
        return raw.decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        for _ in range(count):
            length = self.scalar("<Q")
            self.need(length)
            self.at += length

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            element, length = self.scalar("<I"), self.scalar("<Q")
            if length > MAX_HEADER_BYTES:
                raise BadInputError(f"{shown_path(self.path)}: a GGUF array of {length:,} entries: a corrupt header")
            if length > KEPT_ARRAY_LENGTH:
                self._skip_array(element, length)
                return GgufArray(element, length)
            return [self.value(element) for _ in range(length)]
        raise BadInputError(f"{shown_path(self.path)}: GGUF value type {kind} is not one of GGUF's: a corrupt header")

    def _skip_array(self, element: int, length: int) -> None:
        if element == STRING:
            self.skip_strings(length)
        elif element in _SCALARS:
            size = struct.calcsize(_SCALARS[element]) * length
            self.need(size)
            self.at += size
        else:
            raise BadInputError(f"{shown_path(self.path)}: a GGUF array of type {element}: a corrupt header")


def shortest_float32(value: float) -> float:
    """The shortest decimal that is the same float32 (``2.827``, not the 2.8269999027... a double widens it to): the
    value the converter was given, which the config.json of the same model states."""
    stored = struct.pack("<f", value)
    for digits in range(1, 10):  # 9 significant digits always round-trip a float32
        short = float(f"{value:.{digits}g}")
        if struct.pack("<f", short) == stored:
            return short
    return value


def read_gguf_header(path: Path) -> GgufHeader:
    """``path``'s GGUF header; ``BadInputError`` in one line for a file that is not GGUF v2/v3 or is cut short."""
    try:
        with open(path, "rb") as handle:
            return _parse(_Reader(path, handle))
    except OSError as exc:
        raise BadInputError(f"{shown_path(path)}: cannot be read ({one_line(exc.strerror or str(exc), 80)})") from None


def _parse(reader: _Reader) -> GgufHeader:
    path = shown_path(reader.path)
    reader.need(4)
    if bytes(reader.data[:4]) != MAGIC:
        raise BadInputError(f"{path} does not start with GGUF's magic bytes: not a GGUF file")
    reader.at = 4
    version = reader.scalar("<I")
    if version not in VERSIONS:
        swapped = struct.unpack("<I", struct.pack(">I", version))[0]
        why = "a big-endian file" if swapped in VERSIONS else f"version {version}"
        raise BadInputError(f"{path}: GGUF {why}; mha reads little-endian GGUF versions 2 and 3")
    tensor_count, entry_count = reader.scalar("<Q"), reader.scalar("<Q")
    if tensor_count > MAX_TENSORS or entry_count > MAX_ENTRIES:
        raise BadInputError(f"{path}: {tensor_count:,} tensors and {entry_count:,} metadata entries: a corrupt header")
    metadata: dict[str, Any] = {}
    for _ in range(entry_count):
        key = reader.string()
        metadata[key] = reader.value(reader.scalar("<I"))
    tensors = [_tensor(reader, path) for _ in range(tensor_count)]
    _refuse_split(metadata, path)
    _refuse_cut_short(tensors, metadata, reader, path)
    return GgufHeader(version, metadata, tensors)


DEFAULT_ALIGNMENT = 32
"""GGUF's ``general.alignment`` when the file names none: the data section starts on a multiple of it."""


def _refuse_split(metadata: dict[str, Any], path: str) -> None:
    """A shard of a split GGUF (``split.count`` > 1, llama.cpp's gguf-split) holds part of the tensors: priced alone it
    was the whole model's weights; vLLM loads one file, so it is merged first (docs/models.md)."""
    count = metadata.get("split.count")
    if isinstance(count, int) and count > 1:
        shard = metadata.get("split.no")
        which = f"shard {shard + 1} of {count}" if isinstance(shard, int) else f"one of {count} shards"
        raise BadInputError(
            f"{path}: {which} of a split GGUF (split.count): it holds part of the model's tensors; merge the shards"
            " into one file first (llama-gguf-split --merge), as vLLM loads one file"
        )


def _refuse_cut_short(tensors: list[GgufTensor], metadata: dict[str, Any], reader: _Reader, path: str) -> None:
    """A file whose tensor data ends before its table says (a partial download, a header alone) was priced at the
    table's full bytes: refused, as a safetensors file whose data_offsets run past it is."""
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0:
        alignment = DEFAULT_ALIGNMENT
    start = -(-reader.at // alignment) * alignment
    size = os.fstat(reader.handle.fileno()).st_size
    end = max((start + tensor.offset + tensor.bytes for tensor in tensors), default=start)
    if end > size:
        raise BadInputError(
            f"{path}: its tensor table needs {end:,} bytes of file and it holds {size:,}: a truncated or partial"
            " download?"
        )


def _tensor(reader: _Reader, path: str) -> GgufTensor:
    """One entry of the tensor table, its bytes from its type."""
    name = reader.string()
    rank = reader.scalar("<I")
    if rank > 8:
        raise BadInputError(f"{path}: tensor {one_line(name, 60)} has {rank} dimensions: a corrupt header")
    dims = [reader.scalar("<Q") for _ in range(rank)]
    type_id = reader.scalar("<I")
    offset = reader.scalar("<Q")  # from the data section's start: checked against the file's size
    ggml_type = GGML_TYPES.get(type_id)
    if ggml_type is None:
        raise BadInputError(
            f"{path}: tensor {one_line(name, 60)} is stored as ggml type {type_id}, which mha does not know: its bytes"
            " cannot be priced"
        )
    values = math.prod(dims)
    if dims and dims[0] % ggml_type.block:
        raise BadInputError(
            f"{path}: tensor {one_line(name, 60)} has rows of {dims[0]} values, not whole {ggml_type.name} blocks of"
            f" {ggml_type.block}: a corrupt header"
        )
    return GgufTensor(name, tuple(reversed(dims)), ggml_type, values // ggml_type.block * ggml_type.block_bytes, offset)
