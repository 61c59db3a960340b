"""The cost model's decode step and prefill for ``mha kv`` and ``mha recommend`` on a target: beside their roofline.

One decode step of the batch each replica serves at the full context, and the prefill of one sequence's prompt in
the engine's chunks, on the target's shipped prior (``core.cost.priors``) and on its datasheet (the bound). An
``--engine`` prices with its generation's constants, as ``mha plan`` does (``cli.plan_cmd.plan``:
``prior_profile(device, weights, generation=..., release=...)``); without one, vLLM's latest (``priced_generation``).
``mha plan`` gives the served figures (TTFT, ITL under load, throughput); this is the same model at the
deployment ``kv`` and ``recommend`` describe. Pure Python; the cost model is imported only when one is priced.
"""

from typing import TYPE_CHECKING

from mha_cli.core.record import Record

if TYPE_CHECKING:
    from mha_cli.core.cost.profile import DeviceProfile
    from mha_cli.core.memory import MemoryPlan
    from mha_cli.core.schemas import DeploymentSpec, ModelSpec
    from mha_cli.core.targets import Target


class StepLatency(Record):
    """Predicted times of the deployment's steps on the target's prior, with their bounds, in milliseconds."""

    profile: str
    """The profile's name: ``TARGET-prior@GENERATION`` when an engine generation's constants priced it."""
    profile_kind: str
    profile_source: str
    """Where the profile's rates come from (the generation's fit, or the default constants), as ``mha plan``'s."""
    decode_step_ms: float
    """One step of ``sequences_per_replica`` sequences at the full context (every replica steps alike)."""
    decode_bound_ms: float
    decode_tokens_per_s: float
    """The batch over all replicas / the decode step."""
    prefill_ms: float
    """One sequence's whole prompt (seq_len tokens), in chunks of the engine's max_num_batched_tokens."""
    prefill_bound_ms: float
    relative_error: float
    """The band's error r (``profile.measured_within`` draws the interval it gives, as r was measured)."""


def latency_or_none(
    model: "ModelSpec", memory: "MemoryPlan", deployment: "DeploymentSpec", profile: "DeviceProfile | None" = None
) -> StepLatency | None:
    """``predict_latency``, or None where the cost model has no layout for it (a tp that does not shard the model:
    the memory plan splits such weights evenly, a layout no engine runs)."""
    from mha_cli.core.errors import MhaError

    try:
        return predict_latency(model, memory, deployment, profile)
    except MhaError:
        return None


def predict_latency(
    model: "ModelSpec", memory: "MemoryPlan", deployment: "DeploymentSpec", profile: "DeviceProfile | None" = None
) -> StepLatency:
    """``memory``'s deployment of ``model`` (its tp, replicas, batch; ``deployment``'s formats and context) on
    ``profile`` (default: the target's prior; ``--profile``: a calibration). An MoE model's routed experts spread as
    the memory plan placed them (``core.memory.expert_layout``, which ``mha plan``'s ``serving_case`` prices too):
    under DP attention each device reads only its own experts and the step gathers the ranks' tokens to them."""
    from mha_cli.core.cost.priors import datasheet_profile
    from mha_cli.core.cost.stepper import ServingCase, Stepper, chunked_prefill
    from mha_cli.core.cost.work import decode_shape
    from mha_cli.core.engine.sglang_state_pool import engine_state_model
    from mha_cli.core.memory import expert_layout
    from mha_cli.core.targets import CPU_TARGET_ID, resolve_target
    from mha_cli.core.weight_bytes import stored_scheme

    target = resolve_target(memory.target_id).target  # a row, or a target file (its path is its id)
    from mha_cli.core.engine.quant_capability import deployment_step_refusal
    from mha_cli.core.errors import BadInputError

    emulated = deployment_step_refusal(deployment, target)
    if emulated is not None:  # kv prices the memory and no step (trial 397 #3: its step was faster than bf16's)
        raise BadInputError(emulated)
    case = ServingCase(
        model=engine_state_model(model, memory.engine.name), isl=deployment.seq_len, osl=1,
        concurrency=memory.sequences_per_replica, tp=memory.tp,
        weight_dtype=deployment.weight_dtype, kv_dtype=deployment.kv_dtype, mla_cache=deployment.mla_cache,
        experts=expert_layout(model, memory.tp, memory.replicas, deployment),  # the memory plan's, as plan's step
        weight_scheme=stored_scheme(deployment, deployment.weight_dtype),  # each module as stored, as plan's step
        expert_kernel=memory.expert_kernel,  # (trial 342 #2: a mixed checkpoint's step read every module in one)
    )  # fmt: skip
    if target.id == CPU_TARGET_ID:  # no datasheet: this machine's profile (none yet: no latency) and its peaks
        from mha_cli.core.cost.store import cpu_profile

        prior = profile or cpu_profile()
        bound = prior.ceiling()
    else:
        prior = profile or engine_prior(target, deployment)
        bound = datasheet_profile(target, deployment.weight_dtype)
    figures = []
    for on in (prior, bound):
        stepper = Stepper(case, on)
        decode = stepper.step(decode_shape(memory.sequences_per_replica, deployment.seq_len - 1)).seconds
        prefill, _ = chunked_prefill(stepper, deployment.seq_len, memory.engine.max_num_batched_tokens, [])
        figures.append((decode, prefill))
    (decode, prefill), (decode_bound, prefill_bound) = figures
    return StepLatency(
        profile=prior.name, profile_kind=prior.kind, profile_source=prior.source, decode_step_ms=decode * 1e3, decode_bound_ms=decode_bound * 1e3,
        decode_tokens_per_s=memory.sequences_per_replica * memory.replicas / decode, prefill_ms=prefill * 1e3,
        prefill_bound_ms=prefill_bound * 1e3, relative_error=prior.relative_error,
    )  # fmt: skip


def engine_prior(target: "Target", deployment: "DeploymentSpec") -> "DeviceProfile":
    """``target``'s shipped prior with the constants of ``deployment``'s engine generation and release
    (``priced_generation``): ``mha plan``'s choice (``cli.plan_cmd.plan``)."""
    from mha_cli.core.cost.priors import prior_profile

    return prior_profile(
        target, deployment.weight_dtype, generation=priced_generation(deployment), release=deployment.engine_version
    )


def priced_generation(deployment: "DeploymentSpec") -> str:
    """The engine generation whose constants price ``deployment``'s steps: the one it names (``--engine``, a share's
    spelling, or a config file's engine, whose file may name the engine alone: its latest generation, review 405 #1),
    else vLLM's latest, whose rules already size the memory without an engine. Before, no engine meant the default
    constants, fitted on 2023-24 engines, beside vLLM's memory, so ``--engine vllm`` changed the times (trial 399 #2)
    and the held-out 2025-26 measurements put those constants 2-3x further off than vLLM V1's (ITL median 30%
    against 12%)."""
    from mha_cli.core.engine.generations import generation

    return generation(deployment.engine_generation, deployment.engine).id
