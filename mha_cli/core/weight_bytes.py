"""Bytes of the weights one tensor-parallel rank holds in a weight format (``core.weight_formats``).

The matrices a format covers (``core.params.matrices_per_rank``: linear layers, or only the routed
experts for mxfp4) are priced matrix by matrix with their scales; every other weight of the rank (embedding and LM head
rows, norms, biases, routers) stays bf16. Formats that cover everything (fp32, fp16, bf16) price every weight
alike. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import Matrix, count_params, matrices_per_rank, weight_params_per_device
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import VOCAB_PADDING, ExpertLayout, tp_shard_problem
from mha_cli.core.weight_formats import WeightFormat, weight_format

UNQUANTISED_BYTES = 2
"""bf16: what quantised checkpoints keep their embeddings, head, norms and routers in."""


def _covered(fmt: WeightFormat, matrix: Matrix) -> bool:
    return fmt.scope == "linear" or (fmt.scope == "experts" and matrix.kind == "expert")


def rank_weight_bytes(
    model: ModelSpec, tp: int, weight_dtype: str, vocab_padding: int = VOCAB_PADDING,
    experts: ExpertLayout | None = None,
) -> int:  # fmt: skip
    """Bytes of the weights one rank of ``tp`` holds in ``weight_dtype``, scales and zero points included; the routed
    experts in ``experts``' layout (default: sharded over the tp ranks).

    A ``tp`` that does not shard the model (heads or widths it does not divide) is priced as the whole model's
    bytes split evenly, rounded up, as ``weight_params_per_device`` counts it."""
    fmt = weight_format(weight_dtype)
    if fmt.scope == "experts" and model.moe is None:
        raise BadInputError(
            f"--weight-dtype {fmt.name} quantises routed experts and {model.name} has none (vLLM has no mxfp4 linear"
            " layer): use fp8, int4 or awq"
        )
    if tp > 1 and tp_shard_problem(model, tp, experts) is not None:
        return -(-rank_weight_bytes(model, 1, weight_dtype, vocab_padding) // tp)
    params = weight_params_per_device(model, tp, vocab_padding, experts)
    if fmt.scope == "all":
        return -(-params * int(fmt.nominal_bits) // 8)
    covered = [m for m in matrices_per_rank(model, tp, experts) if _covered(fmt, m)]
    quantised = sum(m.count * fmt.matrix_bytes(m.out_features, m.in_features) for m in covered)
    covered_params = sum(m.count * m.out_features * m.in_features for m in covered)
    return quantised + (params - covered_params) * UNQUANTISED_BYTES


def model_weight_bytes(model: ModelSpec, weight_dtype: str) -> int:
    """Bytes of every weight of the checkpoint (one device, vocabulary unpadded) in ``weight_dtype``."""
    return rank_weight_bytes(model, 1, weight_dtype, vocab_padding=1)


def bytes_per_weight_of(model: ModelSpec, weight_dtype: str) -> float:
    """The model's average bytes per weight in ``weight_dtype`` (bf16 parts and scales included)."""
    return model_weight_bytes(model, weight_dtype) / count_params(model).total
