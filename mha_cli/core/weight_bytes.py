"""Bytes of the weights one tensor-parallel rank holds, priced tensor by tensor from the weight inventory.

Every weight tensor a rank holds (``core.inventory``) is priced on its own: a linear layer's matrices (a routed
experts' fused tensor is E matrices per half, ``core.params.tensor_matrices``) in the layout that stores them, every
other weight of the rank (embedding and LM head rows, norms, biases, routers, fixed-state mixers) in bf16, but the
projections of the mixers an engine quantises (``core.mixer_quantisation``), which the format or scheme stores. Who says
which layout a matrix takes is a pricing:

- a named format (``core.weight_formats``, ``rank_weight_bytes``): the matrices of its scope (linear layers, or only
  the routed experts for mxfp4) alike; formats that cover everything (fp32, fp16, bf16) price every weight alike;
- a checkpoint's scheme (``core.weight_scheme``, ``rank_checkpoint_bytes``): each matrix by its module's name, so
  layers the config ignores stay bf16 and layers it stores differently are priced differently.

When the model folder holds its checkpoint, either count is scaled to the bytes its safetensors headers hold
(``core.header_weights``, ``deployment_rank_bytes``): the inventory says how a rank's share splits, the headers how
much there is.

A fixed-state mixer's weights, which no tensor-parallel layout here splits, are divided evenly over the ranks (as
``core.params`` counts them). Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal, NamedTuple

from mha_cli.core.checkpoint_names import module_names
from mha_cli.core.compute_dtype import compute_dtype
from mha_cli.core.errors import BadInputError
from mha_cli.core.inventory import Tensor, tensor_groups, tensors_of
from mha_cli.core.mixer_quantisation import mixer_projections_quantised
from mha_cli.core.params import MatrixKind, count_params, tensor_matrices
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import VOCAB_PADDING, ExpertLayout, tp_shard_problem
from mha_cli.core.weight_formats import MatrixLayout, WeightFormat, weight_format

if TYPE_CHECKING:
    from mha_cli.core.checkpoint_headers import HeaderWeights
    from mha_cli.core.schemas import DeploymentSpec
    from mha_cli.core.weight_scheme import SchemeMatcher, WeightScheme

UNQUANTISED_BYTES = 2
"""bf16: what quantised checkpoints keep their embeddings, head, norms and routers in."""


class Sides(NamedTuple):
    """What a rank holds outside the layers: a pipeline stage's share (``core.pipeline``)."""

    embedding: bool = True
    """The input side: token embedding, learned positions, embedding norm, a vision tower (the first stage)."""
    head: bool = True
    """The output side: final norm, LM head (the last stage)."""
    tied_copy: bool = False
    """A copy of a tied head's embedding rows on a last stage that is not the first, as vLLM loads it."""


BOTH_SIDES = Sides()
"""The whole model on the rank's layers: both sides (no pipeline)."""


class Stored(NamedTuple):
    """How one matrix is stored: its layout (bytes) and the format it is named by (what it multiplies in,
    ``core.compute_dtype``)."""

    layout: MatrixLayout | WeightFormat
    format: str
    compute: str
    """The dtype its matmul multiplies in (``core.compute_dtype``; a scheme's weight-only rule: bf16)."""


class _FormatPricing(NamedTuple):
    """A named format: the matrices of its scope in it, by kind alone."""

    fmt: WeightFormat

    by_name = False

    @property
    def rest_bytes(self) -> int:
        """Bytes of a weight the format does not quantise."""
        return int(self.fmt.nominal_bits) // 8 if self.fmt.scope == "all" else UNQUANTISED_BYTES

    @property
    def rest_format(self) -> str | None:
        """The format of the weights it does not quantise (None: bf16)."""
        return self.fmt.name if self.fmt.scope == "all" else None

    def store(self, module: str, kind: MatrixKind | Literal["mixer"], experts: int) -> Stored | None:
        """How the matrix is stored: a named format covers the linear layers of its scope (a fixed-state mixer's
        projections among them, where ``core.mixer_quantisation`` says the engine quantises them)."""
        covered = self.fmt.scope in ("all", "linear") or (self.fmt.scope == "experts" and kind == "expert")
        return Stored(self.fmt, self.fmt.name, compute_dtype(self.fmt.name)) if covered else None


class _SchemePricing(NamedTuple):
    """A checkpoint's scheme: each matrix by its module's name."""

    matcher: SchemeMatcher

    by_name = True
    rest_bytes = UNQUANTISED_BYTES
    rest_format = None

    def store(self, module: str, kind: MatrixKind | Literal["mixer"], experts: int) -> Stored | None:
        """How the matrix is stored: the rule its module's name resolves to (a mixer's projections too)."""
        if kind == "expert":
            prefix, _, projection = module.rpartition(".experts.")
            rule = self.matcher.rule_for_experts(prefix, projection, experts)
        else:
            rule = self.matcher.rule_for(module)
        return None if rule is None else Stored(rule.layout, rule.format, rule.compute)


def rank_weight_bytes(
    model: ModelSpec, tp: int, weight_dtype: str, vocab_padding: int = VOCAB_PADDING,
    experts: ExpertLayout | None = None, sides: Sides = BOTH_SIDES,
) -> int:  # fmt: skip
    """Bytes of the weights one rank of ``tp`` holds in ``weight_dtype``, scales and zero points included; the routed
    experts in ``experts``' layout (default: sharded over the tp ranks).

    A ``tp`` that does not shard the model (heads or widths it does not divide) is priced as the whole model's
    bytes split evenly, rounded up, as ``weight_params_per_device`` counts it."""
    refuse_format_without_experts(model, weight_dtype)
    return _rank_bytes(model, tp, _FormatPricing(weight_format(weight_dtype)), vocab_padding, experts, sides=sides)


def refuse_format_without_experts(model: ModelSpec, weight_dtype: str, vendor: str | None = None) -> None:
    """Refuse in one line a format that quantises only routed experts (``mxfp4``) for a model without them: a
    property of the model, so ``mha plan`` asks it once before its search, not once per layout. ``vendor``: the
    target's, whose formats the way out names (NVIDIA's NVFP4 not offered on AMD: trial 402 #8)."""
    if model.block.moe is None:
        refuse_experts_only_format(model.name, weight_dtype, vendor)


def refuse_experts_only_format(name: str, weight_dtype: str, vendor: str | None = None) -> None:
    """Refuse ``weight_dtype`` in one line where it quantises routed experts only (``mxfp4``) and the model ``name``
    (dense) has none; the way out names ``vendor``'s formats."""
    fmt = weight_format(weight_dtype)
    if fmt.scope == "experts":
        others = "fp8, int4 or awq" if vendor == "AMD" else "fp8, nvfp4, int4 or awq"
        raise BadInputError(
            f"--weight-dtype {fmt.name} quantises routed experts and {name} has none: use mxfp4-linear for MXFP4"
            f" on every linear layer (AMD Quark), or {others}"
        )


def rank_checkpoint_bytes(
    model: ModelSpec, tp: int, scheme: WeightScheme, vocab_padding: int = VOCAB_PADDING,
    experts: ExpertLayout | None = None, sides: Sides = BOTH_SIDES,
) -> int:  # fmt: skip
    """Bytes of the weights one rank of ``tp`` holds as the checkpoint stores them (``scheme``, read from its
    quantization_config): each linear layer's matrix in the layout its rule gives, the rest in bf16."""
    return _rank_bytes(
        model, tp, _SchemePricing(scheme.matcher(module_names(model))), vocab_padding, experts, sides=sides
    )


MatrixKey = tuple[str, str, int, int]
"""A linear layer's matrices as ``core.params.matrices_per_rank`` groups them: kind, projection, out, in."""


class MatrixShare(NamedTuple):
    """Alike matrices of one rank stored alike: how many, and their bytes together."""

    count: int
    bytes: int


class StoredMatrices(NamedTuple):
    """What one rank of a checkpoint holds of its linear layers, by the dtype each multiplies in
    (``core.compute_dtype``): what a step reads and computes of each, layer by layer."""

    matrices: dict[tuple[MatrixKey, str], MatrixShare]
    """Each group of alike linear-layer matrices (``MatrixKey``, over the layers) by its compute dtype."""
    mixers: dict[str, tuple[float, float]]
    """Fixed-state mixers' weights by compute dtype: (weights, bytes), the rank's even share of every layer's (the
    projections as stored, their convolutions and vectors with the bf16 ones)."""


def stored_matrices(
    model: ModelSpec, tp: int, weight_dtype: str, scheme: WeightScheme | None = None,
    experts: ExpertLayout | None = None,
) -> StoredMatrices:  # fmt: skip
    """``StoredMatrices`` of one rank of ``tp``, as the checkpoint's ``scheme`` stores each module (the memory plan's
    ``rank_checkpoint_bytes``), or in the named ``weight_dtype`` (``rank_weight_bytes``)."""
    if scheme is not None:
        pricing: _FormatPricing | _SchemePricing = _SchemePricing(scheme.matcher(module_names(model)))
    else:
        pricing = _FormatPricing(weight_format(weight_dtype))
    found = StoredMatrices({}, {})
    _rank_bytes(model, tp, pricing, VOCAB_PADDING, experts, by_matrix=found)
    return found


def deployment_rank_bytes(
    model: ModelSpec, tp: int, weight_dtype: str, deployment: DeploymentSpec | None,
    vocab_padding: int = VOCAB_PADDING, experts: ExpertLayout | None = None, sides: Sides = BOTH_SIDES,
) -> int:  # fmt: skip
    """``rank_checkpoint_bytes`` when ``deployment`` carries the checkpoint's scheme and ``weight_dtype`` is its format
    (a plan priced as the checkpoint stores it), else ``rank_weight_bytes`` (a format asked for, or tried); when it
    carries the checkpoint's header-read weights for ``weight_dtype``, that count scaled to their total
    (``HeaderWeights.rank_bytes``: the rank's share of the inventory, of the bytes the headers hold). ``sides``: what a
    pipeline stage holds of the embedding and the head (``Sides``)."""
    scheme = stored_scheme(deployment, weight_dtype)
    if scheme is not None:
        counted = rank_checkpoint_bytes(model, tp, scheme, vocab_padding, experts, sides)
    else:
        counted = rank_weight_bytes(model, tp, weight_dtype, vocab_padding, experts, sides)
    headers = stored_headers(deployment, weight_dtype)
    return counted if headers is None else headers.rank_bytes(counted)


def stored_headers(deployment: DeploymentSpec | None, weight_dtype: str) -> HeaderWeights | None:
    """The checkpoint's header-read weights ``deployment`` carries, when ``weight_dtype`` is the format they stand
    for."""
    if deployment is None or deployment.checkpoint_headers is None:
        return None
    return deployment.checkpoint_headers if deployment.checkpoint_headers.format == weight_dtype else None


WeightSource = Literal["config", "checkpoint headers"]


def weights_source(deployment: DeploymentSpec | None, weight_dtype: str) -> WeightSource:
    """What prices the weights of ``deployment`` in ``weight_dtype``: the checkpoint's headers (``stored_headers``)
    or the weight inventory counted from the config."""
    return "config" if stored_headers(deployment, weight_dtype) is None else "checkpoint headers"


def stored_scheme(deployment: DeploymentSpec | None, weight_dtype: str) -> WeightScheme | None:
    """The checkpoint's scheme ``deployment`` carries, when ``weight_dtype`` is the format it stands for."""
    if deployment is None or deployment.weight_scheme is None:
        return None
    return deployment.weight_scheme if deployment.weight_scheme.format == weight_dtype else None


def _rank_bytes(
    model: ModelSpec, tp: int, pricing: _FormatPricing | _SchemePricing, vocab_padding: int,
    experts: ExpertLayout | None, by_kind: dict[str, int] | None = None, sides: Sides = BOTH_SIDES,
    by_matrix: StoredMatrices | None = None,
) -> int:  # fmt: skip
    """The rank's bytes; with ``by_kind``, also added there by the inventory's kind of each tensor, the bytes of a
    matrix beyond its values (scales, zero points, group indices) under ``SCALES``; with ``by_matrix``, each linear
    layer's and mixer's bytes added there by compute dtype (``StoredMatrices``); ``sides``: what it holds outside the
    layers."""
    if tp > 1 and tp_shard_problem(model, tp, experts) is not None:
        return -(-_rank_bytes(model, 1, pricing, vocab_padding, None, sides=sides) // tp)
    n_experts = model.block.moe.n_experts if model.block.moe is not None else 0
    total = 0
    groups = tensor_groups(model, tp, vocab_padding=vocab_padding, experts=experts)
    if sides.tied_copy and model.embeddings.tied:
        embedding = next(t for t in groups[0].tensors if t.kind == "embedding")
        total += embedding.numel * pricing.rest_bytes
    held = [group for i, group in enumerate(groups) if (i, sides.embedding) != (0, False)]
    held = held if sides.head else held[:-1]
    rest_dtype = compute_dtype(pricing.rest_format)
    quantised = mixer_projections_quantised(model.recurrent)  # else every mixer weight at the rest's bytes
    for group in held:
        tensors = [t for t in group.tensors if not t.buffer]
        mixers = [t for t in tensors if t.kind == "mixer"]  # split evenly, as core.params counts them
        projections = [t for t in mixers if len(t.shape) == 2 and t.name.endswith(".weight")] if quantised else []
        mixer_rest = sum(t.numel for t in mixers) - sum(t.numel for t in projections)
        matrices = [
            (module, kind, part, out, inp, n, t.kind)
            for t in tensors if t.kind != "mixer"
            for (kind, part, out, inp), count in tensor_matrices(t)
            for module, n in _modules(t, part, count)
        ]  # fmt: skip
        plain = [t for t in tensors if t.kind != "mixer" and not any(tensor_matrices(t))]
        rest = sum(t.numel for t in plain) * pricing.rest_bytes
        first = group.places[0]
        places = group.places if pricing.by_name else [first]  # a format reads no names: one place for all
        repeats = 1 if pricing.by_name else len(group.places)
        for place in places:
            placed = 0
            for module, kind, part, out, inp, n, tensor_kind in matrices:
                stored = pricing.store(_at(module, first, place), kind, n_experts if kind == "expert" else 0)
                layout = stored.layout if stored is not None else None
                matrix = layout.matrix_bytes(out, inp) if layout is not None else out * inp * UNQUANTISED_BYTES
                placed += n * matrix
                if by_matrix is not None:
                    key = ((kind, part, out, inp), stored.compute if stored is not None else compute_dtype(None))
                    share = by_matrix.matrices.get(key, MatrixShare(0, 0))
                    by_matrix.matrices[key] = MatrixShare(share.count + n * repeats, share.bytes + n * matrix * repeats)
                if by_kind is not None:
                    values = layout.value_bytes(out, inp) if layout is not None else matrix
                    _add(by_kind, tensor_kind, n * values * repeats)
                    _add(by_kind, SCALES, n * (matrix - values) * repeats)
            mixer = _mixer_bytes(projections, mixer_rest, pricing, tp, first, place, rest_dtype, by_matrix, repeats)
            total += (rest + placed + mixer) * repeats
            if by_kind is not None:
                for tensor in plain:
                    _add(by_kind, tensor.kind, tensor.numel * pricing.rest_bytes * repeats)
                _add(by_kind, "mixer", mixer * repeats)
    return total


def _mixer_bytes(
    projections: list[Tensor], rest: int, pricing: _FormatPricing | _SchemePricing, tp: int, first: int | None,
    place: int | None, rest_dtype: str, by_matrix: StoredMatrices | None, repeats: int,
) -> int:  # fmt: skip
    """One rank's even share of a layer's fixed-state mixer: its ``projections`` as ``pricing`` stores each (a
    scheme may quantise them), its other ``rest`` weights (convolution, vectors) and the projections it leaves
    unquantised at the rest's bytes; added to ``by_matrix`` by compute dtype."""
    plain, stored_bytes, by_dtype = rest, 0, {}
    for tensor in projections:
        stored = pricing.store(_at(tensor.name.removesuffix(".weight"), first, place), "mixer", 0)
        if stored is None or stored.format == pricing.rest_format:  # fp32, fp16, bf16: as the rest
            plain += tensor.numel
            continue
        out, inp = tensor.shape
        matrix = stored.layout.matrix_bytes(out, inp)
        stored_bytes += matrix
        dtype = stored.compute
        weights, held = by_dtype.get(dtype, (0.0, 0.0))
        by_dtype[dtype] = (weights + tensor.numel / tp, held + matrix / tp)
    plain_bytes = -(-plain // tp) * pricing.rest_bytes
    if by_matrix is not None and (plain or by_dtype):
        weights, held = by_dtype.get(rest_dtype, (0.0, 0.0))
        by_dtype[rest_dtype] = (weights + plain / tp, held + plain_bytes)
        for dtype, (weights, held) in by_dtype.items():
            before = by_matrix.mixers.get(dtype, (0.0, 0.0))
            by_matrix.mixers[dtype] = (before[0] + weights * repeats, before[1] + held * repeats)
    return plain_bytes + -(-stored_bytes // tp)


SCALES = "scales"
"""``model_bytes_by_kind``'s key for the bytes of quantised matrices beyond their values."""


def _add(counts: dict[str, int], key: str, value: int) -> None:
    if value:
        counts[key] = counts.get(key, 0) + value


def _at(module: str, first: int | None, place: int | None) -> str:
    """``module``, named in layer ``first``, as named in layer ``place`` (the input and output sides unchanged)."""
    if first is None or first == -1 or place == first:
        return module
    prefix = f"model.layers.{first}."
    return f"model.layers.{place}.{module[len(prefix) :]}" if module.startswith(prefix) else module


def _modules(tensor: Tensor, part: str, count: int) -> Iterator[tuple[str, int]]:
    """The checkpoint modules behind ``count`` matrices of ``tensor``, with how many each: a routed experts' fused
    gate-and-up tensor is the experts' ``gate_proj`` and ``up_proj`` (named ``{prefix}.experts.{projection}``, every
    expert alike), any other tensor its own module."""
    module = tensor.name.removesuffix(".weight")
    if tensor.kind == "expert" and part == "gate_up_proj":
        prefix = module.removesuffix(".gate_up_proj")
        yield f"{prefix}.gate_proj", count // 2
        yield f"{prefix}.up_proj", count // 2
        return
    yield module, count


def model_modules(model: ModelSpec) -> Iterator[str]:
    """Every module name of the checkpoint as mha names it (one device): each weight's module, and each routed expert
    one by one (``model.layers.N.mlp.experts.E.gate_proj``). What a scheme's patterns are checked against."""
    n_experts = model.block.moe.n_experts if model.block.moe is not None else 0
    for place in [None, *range(model.n_layers), -1]:
        seen: set[str] = set()
        for tensor in tensors_of(model, place, vocab_padding=1):
            module = tensor.name.rpartition(".")[0] if tensor.name.endswith((".weight", ".bias")) else tensor.name
            if tensor.kind == "expert":
                prefix, _, projection = module.rpartition(".experts.")
                projections = ("gate_proj", "up_proj") if projection.startswith("gate_up_proj") else ("down_proj",)
                for e in range(n_experts):
                    for name in projections:
                        module = f"{prefix}.experts.{e}.{name}"
                        if module not in seen:
                            seen.add(module)
                            yield module
            elif module not in seen:
                seen.add(module)
                yield module


def model_weight_bytes(model: ModelSpec, weight_dtype: str) -> int:
    """Bytes of every weight of the checkpoint (one device, vocabulary unpadded) in ``weight_dtype``."""
    return rank_weight_bytes(model, 1, weight_dtype, vocab_padding=1)


def deployment_model_bytes(model: ModelSpec, weight_dtype: str, deployment: DeploymentSpec | None) -> int:
    """``model_weight_bytes``, as the checkpoint stores it when ``deployment`` carries its scheme for
    ``weight_dtype``."""
    return deployment_rank_bytes(model, 1, weight_dtype, deployment, vocab_padding=1)


def bytes_per_weight_of(model: ModelSpec, weight_dtype: str) -> float:
    """The model's average bytes per weight in ``weight_dtype`` (bf16 parts and scales included)."""
    return model_weight_bytes(model, weight_dtype) / count_params(model).total


def model_bytes_by_kind(model: ModelSpec, weight_dtype: str, deployment: DeploymentSpec | None) -> dict[str, int]:
    """``deployment_model_bytes`` without the headers, by the inventory's kind of tensor (``TensorKind``), the bytes of
    quantised matrices beyond their values under ``SCALES``: what a checkpoint's headers are compared with."""
    counts: dict[str, int] = {}
    scheme = stored_scheme(deployment, weight_dtype)
    if scheme is not None:
        pricing: _FormatPricing | _SchemePricing = _SchemePricing(scheme.matcher(module_names(model)))
    else:
        pricing = _FormatPricing(weight_format(weight_dtype))
    _rank_bytes(model, 1, pricing, 1, None, counts)
    return counts
