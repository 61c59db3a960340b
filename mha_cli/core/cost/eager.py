"""The predicted time of a step that eager torch runs (``verify``'s built stack, ``calibrate``'s check). Pure Python.

The work is the cost model's (``core.cost.work``) in the modules' one dtype (weights, activations and cache alike);
the fixed cost is the operators the step dispatched, counted on the built model (``nn.dispatch``), at the
profile's dispatch overhead. No engine step overhead: nothing schedules between the steps.
"""

from __future__ import annotations

from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.step import StepTime, step_time
from mha_cli.core.cost.work import StepShape, decode_shape, forward_ops
from mha_cli.core.schemas import MlaCacheMode, ModelSpec


def predict_eager(
    model: ModelSpec,
    shape: StepShape,
    profile: DeviceProfile,
    *,
    dispatches: int,
    dtype: str,
    tp: int = 1,
    mla_cache: MlaCacheMode = "absorbed",
) -> StepTime:
    """``shape`` through ``model`` (one rank of ``tp``) in ``dtype`` on ``profile``, ``dispatches`` operators."""
    ops = forward_ops(model, shape, tp=tp, weight_dtype=dtype, kv_dtype=dtype, mla_cache=mla_cache)
    return step_time(ops, profile, tp=tp, execution="eager", dispatches=dispatches)


def predict_attention_step(
    model: ModelSpec,
    batch: int,
    seq_len: int,
    profile: DeviceProfile,
    *,
    dispatches: int,
    dtype: str,
    mla_cache: MlaCacheMode = "absorbed",
) -> StepTime:
    """One decode step of one attention layer alone (``mha bench``'s step: projections, cache write, attention over
    ``seq_len`` tokens, output projection): the attention ops of ``model``'s first layer, eager."""
    ops = forward_ops(model, decode_shape(batch, seq_len - 1), weight_dtype=dtype, kv_dtype=dtype, mla_cache=mla_cache)
    attention = [op._replace(count=op.count / model.n_layers) for op in ops if op.name.startswith("attention")]
    return step_time(attention, profile, execution="eager", dispatches=dispatches)
