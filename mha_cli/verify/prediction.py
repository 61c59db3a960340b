"""Verify's predicted decode and prefill times: the cost model on the active profile, beside the measured ones.

The profile: ``--profile`` when given; else the newest one ``mha calibrate`` measured on this device in this
dtype; else, on a GPU the targets database knows, its shipped prior. On a CPU without a calibration there is no
prediction (the note says which command makes one). The work is the built stack's (``core.cost.work`` of the
model cut to the built layers, on one rank of tp), its fixed cost the operators each timed step dispatched.
A single-process run at tp > 1 has identity all-reduces: its prediction leaves the collective out too.
"""

from __future__ import annotations

from mha_cli.core.cost.eager import predict_eager
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.record import Record
from mha_cli.nn.profile_choice import active_profile as active_profile
from mha_cli.verify.plan import VerifyPlan, first_layers
from mha_cli.verify.report import RankResult


class Prediction(Record):
    """Predicted times of the built stack's timed steps, and from what."""

    profile: str
    profile_kind: str
    profile_source: str
    decode_ms: float
    prefill_ms: float
    how: str


def predict_stack(plan: VerifyPlan, rank: RankResult, profile: DeviceProfile, *, single_process: bool) -> Prediction:
    """The built stack's decode step and prefill on ``profile``, with the operators the rank counted."""
    built = first_layers(plan.model, plan.n_layers_built)
    if single_process and plan.tp > 1:
        profile = profile.model_copy(update={"collective": None})  # one process: the all-reduces are identities
    deployment = plan.deployment
    common = {"dtype": plan.dtype, "tp": plan.tp, "mla_cache": plan.mla_cache or "absorbed"}
    decode = predict_eager(
        built, decode_shape(deployment.batch, deployment.seq_len - 1), profile, dispatches=rank.decode_dispatches,
        **common,
    )  # fmt: skip
    prefill = predict_eager(
        built, prefill_shape(plan.prefill_tokens, sequences=deployment.batch, all_logits=True), profile,
        dispatches=rank.prefill_dispatches, **common,
    )  # fmt: skip
    how = (
        f"the cost model on {profile.name} ({profile.kind}): each op's bytes / bandwidth or FLOPs / rate at its size,"
        f" + {rank.decode_dispatches} (decode) and {rank.prefill_dispatches} (prefill) dispatched operators x"
        f" {profile.dispatch_overhead_s * 1e6:.1f} us"
    )
    return Prediction(
        profile=profile.name, profile_kind=profile.kind, profile_source=profile.source, decode_ms=decode.seconds * 1e3,
        prefill_ms=prefill.seconds * 1e3, how=how,
    )  # fmt: skip
