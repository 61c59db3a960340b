"""The predicted time of a step that eager torch runs (``verify``'s built stack, ``calibrate``'s check). Pure Python.

The work is the cost model's (``core.cost.work``) in the modules' one dtype (weights, activations and cache alike);
the fixed cost is the operators the step dispatched, counted on the built model (``nn.dispatch``), at the
profile's dispatch overhead. No engine step overhead: nothing schedules between the steps.
"""

from __future__ import annotations

from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.step import StepTime, step_time
from mha_cli.core.cost.work import StepShape, forward_ops
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
