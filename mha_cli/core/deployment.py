"""Build a ``DeploymentSpec`` from a config file's values overridden by command-line options.

The context a model is priced at, when neither ``--seq`` nor the config file gives one, is the
model's own trained context (``max_position_embeddings``, as vLLM's default ``max_model_len``),
else 8,192 tokens. ``default_seq_len`` is that rule, shared by every command.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mha_cli.core.dtypes import (
    FLOAT16_REFUSED,
    default_kv_for_weights,
    fp8_variant_named,
    is_engine_default_kv,
    normalise_dtype_name,
)
from mha_cli.core.engine.generations import generation_of, typed_release
from mha_cli.core.engine.share_spelling import EngineShare, share_engine
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.targets import Target, bf16_notes, resolve_target
from mha_cli.core.validation import describe_validation_error
from mha_cli.core.vllm_quantization import PastedQuantization, pasted_format

FALLBACK_SEQ_LEN = 8192
"""Context used when neither the user, the config file nor the model states one."""

UTILISATION_FLAGS = "--gpu-memory-utilization (or --mem-fraction-static, --free-gpu-memory-fraction)"
"""The option and its engines' aliases, named together in an error (trial 351 #9: --mem-fraction-static 0 was
answered as --gpu-memory-utilization alone)."""
_OPTION_NAMES = {"seq_len": "--seq", "batch": "--batch", "kv_dtype": "--kv-dtype", "kv_fp8_variant": "--kv-dtype", "weight_dtype": "--weight-dtype",
                 "tp": "--tp", "block_size": "--block-size", "target": "--target", "mla_cache": "--mla-cache",
                 "state_convention": "--state-convention",
                 "engine": "--engine", "engine_generation": "--engine", "engine_version": "--engine", "gpu_memory_utilization": UTILISATION_FLAGS,
                 "max_num_batched_tokens": "--max-num-batched-tokens", "max_num_seqs": "--max-num-seqs",
                 "kv_cache_memory_bytes": "--kv-cache-gib", "limit_mm_per_prompt": "--limit-mm-per-prompt",
                 "kv_offload_bytes": "--kv-offload-gib", "shared_prefixes": "--shared-prefixes",
                 "async_scheduling": "--async-scheduling",
                 "scheduler_recv_interval": "--scheduler-recv-interval"}  # fmt: skip


def default_seq_len(model: ModelSpec | None, base: DeploymentSpec | None = None) -> int:
    """The config file's seq_len if it sets one, else the model's context length, else 8,192."""
    if base is not None and "seq_len" in base.model_fields_set:
        return base.seq_len
    if model is not None and model.context_length:
        return model.context_length
    return FALLBACK_SEQ_LEN


PLAN_FLAGS = {
    "gpu_memory_utilization": "--gpu-memory-utilization", "max_num_batched_tokens": "--max-num-batched-tokens",
    "max_num_seqs": "--max-num-seqs", "kv_cache_memory_bytes": "--kv-cache-gib", "kv_cache_gib": "--kv-cache-gib",
    "async_scheduling": "--async-scheduling", "prefix_caching": "--enable-prefix-caching",
    "fail_if_no_fit": "--fail-if-no-fit",
}  # fmt: skip
"""Options that only size or judge the engine's memory plan on a device: nothing prices them without a target."""


def plan_flags_given(spellings: dict[str, str] | None = None, **given: object) -> list[str]:
    """The options of ``PLAN_FLAGS`` given (not None; ``--fail-if-no-fit`` when set), as typed (``spellings``: an
    option's destination -> the spelling typed, ``--mem-fraction-static`` for ``gpu_memory_utilization``: trial 406
    #9 was told of ``--gpu-memory-utilization``; ``--no-...`` for an option turned off), each once."""
    named = []
    for name, value in given.items():
        if value is None or (value is False and name == "fail_if_no_fit"):
            continue
        flag = (spellings or {}).get(name, PLAN_FLAGS[name])
        named.append(f"--no-{flag[2:]}" if value is False and not flag.startswith("--no-") else flag)
    return list(dict.fromkeys(named))


def refuse_plan_flags_without_target(
    deployment: DeploymentSpec, spellings: dict[str, str] | None = None, **given: object
) -> None:
    """One line for options of ``PLAN_FLAGS`` given (``plan_flags_given``) where the deployment has no target (neither
    --target nor the config file's): they were accepted, exit 0, and priced nothing (``--fail-if-no-fit`` always
    passed)."""
    if deployment.target is not None:
        return
    named = plan_flags_given(spellings, **given)
    if named:
        verb, pronoun = ("sizes or judges", "it") if len(named) == 1 else ("size or judge", "them")
        raise BadInputError(
            f"{', '.join(named)} {verb} the engine's memory plan on a device: add --target (e.g. h100), or leave"
            f" {pronoun} out"
        )


def refuse_file_tp(
    origin: str, base: DeploymentSpec | None, model: ModelSpec, tp_flag: int | None, target: str | None = None,
    *, heads: bool = True,
) -> None:  # fmt: skip
    """A config file's ``deployment.tp`` that does not split its model's heads (rule MHA024; ``heads`` False: left to
    ``mha check``'s own rule) or the devices of ``target`` (the deployment's, from the file or --target), refused
    naming the file and the way out; nothing to refuse when ``--tp`` (``tp_flag``) overrides it."""
    if tp_flag is not None or base is None or "tp" not in base.model_fields_set:
        return
    from mha_cli.core.tensor_parallel import heads_split_problem

    problem = heads_split_problem(model, base.tp) if heads else None
    if problem is None and target is not None and base.dp is None:
        try:
            n_devices = resolve_target(target).n_devices
        except BadInputError as wrong:  # the file's own target, before the merge says so (review 249)
            raise BadInputError(
                f"{origin}: deployment.target: {wrong.message}" if target == base.target else wrong.message
            ) from None
        if base.tp > n_devices or n_devices % base.tp:
            problem = f"tp ({base.tp}) must divide the {n_devices} device(s) of target {target!r}"
    if problem is not None:
        raise BadInputError(f"{origin}: deployment.tp {base.tp}: {problem} (edit the file, or override it with --tp)")


def merge_deployment(
    base: DeploymentSpec | None, *, model: ModelSpec | None = None, **overrides: Any
) -> DeploymentSpec:
    """``base`` (or the defaults) with every override that is not ``None`` applied and validated."""
    fields = base.model_dump(exclude_unset=True) if base is not None else {}
    asked = overrides.get("weight_dtype")
    if isinstance(asked, PastedQuantization):  # vLLM's --quantization names the checkpoint's method, or a format
        scheme = None if base is None or base.weight_scheme is None else base.weight_scheme.quant_method
        stored = None if base is None else base.checkpoint_format
        family = None if model is None else model.family
        overrides = {**overrides, "weight_dtype": pasted_format(asked, stored, scheme, family)}
    if is_engine_default_kv(overrides.get("kv_dtype")):  # vLLM's auto: as left out (a checkpoint's fp8 can fill it)
        overrides = {**overrides, "kv_dtype": None}
        fields.pop("kv_dtype", None)  # a file's too (review 363 #2: its bf16 stayed beside --weight-dtype fp32)
        fields.pop("kv_fp8_variant", None)
    if overrides.get("weight_dtype") is not None:  # a format asked for prices every weight alike, not as stored
        fields.pop("weight_scheme", None)
        fields.pop("checkpoint_headers", None)
        followed = base is not None and base.kv_dtype == base.weight_dtype and base.kv_dtype in ("fp16", "bf16")
        if followed and overrides.get("kv_dtype") is None and overrides["weight_dtype"] == "fp32":
            fields.pop("kv_dtype", None)  # the cache was the weights' dtype: it follows them (trial 366 #1)
    if overrides.get("kv_dtype") is not None:  # a format asked for names its own fp8 encoding, or none (e4m3)
        fields.pop("kv_fp8_variant", None)
    if overrides.get("target") is None and fields.get("target") is not None:  # the file's own, not --target's:
        try:  # said as the file's field, which the same line from --target would not name
            resolve_target(fields["target"])
        except BadInputError as wrong:
            raise BadInputError(
                f"the config file's deployment.target: {wrong.message} (edit the file, or override it with --target"
                " where the command takes one)"
            ) from None
    share = overrides.get("gpu_memory_utilization")
    if isinstance(share, EngineShare):  # SGLang's or TensorRT-LLM's name for it picks or checks the engine
        named = overrides.get("engine") or fields.get("engine")
        engine = share_engine(share, None if named is None else generation_of(named).engine)
        overrides = {**overrides, "gpu_memory_utilization": float(share)}
        if named is None and engine is not None:
            overrides["engine"] = engine
    fields.update({key: value for key, value in overrides.items() if value is not None})
    if overrides.get("engine") is not None:  # --engine names the engine and its generation (vllm@0.10)
        chosen = generation_of(overrides["engine"])
        fields["engine"], fields["engine_generation"] = chosen.engine, chosen.id
        fields.pop("engine_version", None)  # the release typed, kept for the launch lines (core.engine.flags)
        if typed_release(overrides["engine"]) is not None:
            fields["engine_version"] = typed_release(overrides["engine"])
    elif fields.get("engine") is not None:
        fields["engine"] = generation_of(fields["engine"]).engine
    if fields.get("engine_version") and not fields.get("engine_generation"):  # a config file's release alone:
        engine = fields.get("engine") or "vllm"  # priced by the generation that covers it, as --engine ENGINE@VERSION
        fields["engine_generation"] = generation_of(f"{engine}@{fields['engine_version']}").id
    if fields.get("checkpoint_kv_dtype") and "kv_dtype" not in fields:  # the checkpoint's own, where the engine
        from mha_cli.core.engine.checkpoint_kv import engine_runs_checkpoint_kv  # runs it by itself

        if engine_runs_checkpoint_kv(
            fields.get("engine"), fields.get("engine_generation"), fields.get("engine_version"),
            fields.get("checkpoint_kv_method") or "modelopt", fields["checkpoint_kv_dtype"],
        ):  # fmt: skip
            fields["kv_dtype"] = fields["checkpoint_kv_dtype"]
    follows = default_kv_for_weights(fields.get("engine") or "vllm", fields.get("weight_dtype") or "bf16")
    if follows is not None and "kv_dtype" not in fields:  # the engine's auto: the model's dtype (review 360 #1)
        fields["kv_dtype"] = follows
    fields.setdefault("seq_len", default_seq_len(model, base))
    if model is not None and _sparse_mla(model, fields.get("engine")):  # the layout vLLM and SGLang allocate for it
        fields = _sparse_mla_layout(model, fields)
    if fields.get("async_scheduling") is not None:
        check_async_scheduling(fields)
    if fields.get("vllm_fp8_linear_kernel") is not None:
        check_linear_backend(fields)
    if (fields.get("scheduler_recv_interval") or 1) > 1 and fields.get("engine") == "sglang":
        check_recv_interval(fields)
    if fields.get("block_size") is not None:
        _check_block_flag(fields.get("engine"), fields.get("engine_generation"), fields.get("engine_version"))
    limits = fields.get("limit_mm_per_prompt")
    if limits is not None and not any(limits.values()) and fields.get("engine") == "sglang":  # text only
        from mha_cli.core.engine.architectures_served import served_as
        from mha_cli.core.engine.sglang_text_only import text_only_refusal

        architectures = () if model is None else served_as(model)
        raise BadInputError(text_only_refusal(fields.get("engine_version"), architectures))
    if fields.get("limit_mm_per_prompt") is not None and fields.get("engine") not in (None, "vllm"):
        raise BadInputError(
            f"--limit-mm-per-prompt and --text-only are vLLM's: {fields['engine']} is priced with the tower loaded and"
            " its default profiling; leave them out, or use --engine vllm"
        )
    try:
        deployment = DeploymentSpec.model_validate(fields)
    except ValidationError as exc:
        raise BadInputError(describe_validation_error(exc, _OPTION_NAMES)) from exc
    if model is not None and deployment.weight_scheme is not None:  # a release that cannot load the checkpoint
        from mha_cli.core.engine.fbgemm_moe import fbgemm_moe_refusal

        refusal = fbgemm_moe_refusal(model, deployment)
        if refusal is not None:
            raise BadInputError(refusal)
    return deployment


DS_MLA_ENGINES = (None, "vllm", "sglang")
"""Engines (None: vLLM, the default) that store a sparse-MLA model's (DeepSeek-V3.2's indexer) fp8 cache in the
fp8_ds_mla layout, 656 B a layer (512 fp8 + 4 fp32 scales + 64 bf16 RoPE), somewhere: vLLM by release and GPU
(``core.engine.sparse_mla_kv``); SGLang always (``NSATokenToKVPool`` sets ``kv_cache_dim`` to that layout's width
when it stores fp8: ``MLATokenToKVPool``, ``override_kv_cache_dim if nsa_kv_cache_store_fp8``). TensorRT-LLM's is
not read: priced as plain fp8."""


def _sparse_mla(model: ModelSpec, engine: str | None) -> bool:
    """Whether ``model`` is sparse MLA (an indexer) served by an engine of ``DS_MLA_ENGINES``."""
    mla = model.attention.mla
    return mla is not None and mla.indexer is not None and engine in DS_MLA_ENGINES


def _sparse_mla_layout(model: ModelSpec, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with the KV format the engine stores a sparse-MLA model's cache in: fp8 typed in any spelling as
    fp8_ds_mla on SGLang, without a target, and on vLLM where ``vllm_sparse_mla_kv`` says so, plain fp8 where vLLM's
    backend stores that (trial 333 #1: ``fp8_e4m3`` was priced 708 B a layer where ``fp8`` was 788). Where no sparse
    backend of the release takes it, kept as asked: ``core.engine.plan.kv_format_note`` says why (kv's note, plan's
    refusal)."""
    typed = fields.get("kv_dtype")
    kv_dtype = None if typed is None else normalise_dtype_name(typed, kv=True)
    e5m2 = fp8_variant_named(typed) == "e5m2" or (kv_dtype == "fp8" and fields.get("kv_fp8_variant") == "e5m2")
    target = resolve_target(fields["target"]).target if fields.get("target") else None
    if fields.get("engine") == "sglang" or target is None:
        return {**fields, "kv_dtype": "fp8_ds_mla"} if kv_dtype == "fp8" else fields
    from mha_cli.core.engine.flags import release_meant
    from mha_cli.core.engine.generations import BY_ID, generation_of
    from mha_cli.core.engine.sparse_mla_kv import vllm_sparse_mla_kv

    generation = BY_ID.get(fields.get("engine_generation") or "") or generation_of("vllm")
    release = release_meant(generation, fields.get("engine_version"))
    heads = model.attention.n_heads // (fields.get("tp") or 1)
    stored = vllm_sparse_mla_kv(kv_dtype, e5m2, release, target, heads)
    if stored is None or stored == kv_dtype:
        return fields
    return {**{key: value for key, value in fields.items() if key != "kv_fp8_variant"}, "kv_dtype": stored}


BLOCK_FLAGS = {"vllm": "--block-size", "sglang": "--page-size"}
"""The flag each engine's launch line sets ``--block-size`` with (TensorRT-LLM's tokens_per_block is not in the flags
table: not checked)."""


def check_async_scheduling(fields: dict[str, Any]) -> None:
    """Refuse ``--async-scheduling`` in one line on an engine other than vLLM, and on a vLLM release without the flag
    (before 0.10.0, ``core.engine.flags``); ``--no-async-scheduling`` is what such a release does anyway. ``fields``:
    a deployment's (or ``mha recommend``'s request's) engine, engine_generation, engine_version and
    async_scheduling."""
    from mha_cli.core.engine.flags import setting_refusal
    from mha_cli.core.engine.generations import generation

    engine = fields.get("engine") or "vllm"
    if engine != "vllm":
        raise BadInputError(
            f"--async-scheduling/--no-async-scheduling are vLLM's: {engine} is priced with its own scheduler; leave"
            " them out, or use --engine vllm"
        )
    if fields["async_scheduling"]:
        chosen = generation(fields.get("engine_generation"), "vllm")
        refusal = setting_refusal(
            "--async-scheduling", "vllm", chosen, fields.get("engine_version"), "--async-scheduling"
        )
        if refusal is not None:
            raise BadInputError(refusal)


def check_recv_interval(fields: dict[str, Any]) -> None:
    """Refuse ``--scheduler-recv-interval`` in one line on an SGLang release without it (before 0.5.1,
    ``core.engine.flags``); another engine's is refused by ``DeploymentSpec``."""
    from mha_cli.core.engine.flags import has, release_meant, release_named, span
    from mha_cli.core.engine.generations import generation

    chosen, typed = generation(fields.get("engine_generation"), "sglang"), fields.get("engine_version")
    word = "--scheduler-recv-interval"
    if not has("sglang", release_meant(chosen, typed), word):
        first = span("sglang", word).first
        raise BadInputError(
            f"{word} is SGLang's from {first}, which {release_named('sglang', chosen, typed)} lacks: drop it or use"
            f" --engine sglang@{first} or later"
        )


def check_linear_backend(fields: dict[str, Any]) -> None:
    """Refuse ``vllm_fp8_linear_kernel`` in one line on a vLLM release without ``--linear-backend`` (before 0.22.0)
    or without the kernel it names (humming before 0.25.0): the launch line could not ask for the kernel priced."""
    from mha_cli.core.engine.flags import setting_refusal
    from mha_cli.core.engine.generations import generation

    chosen = generation(fields.get("engine_generation"), "vllm")
    kernel = fields["vllm_fp8_linear_kernel"]
    flag = f"--linear-backend {kernel}"
    refusal = setting_refusal(f"vllm_fp8_linear_kernel {kernel}", "vllm", chosen, fields.get("engine_version"), flag)
    if refusal is not None:
        raise BadInputError(refusal)


def _check_block_flag(engine: str | None, generation_id: str | None, typed: str | None) -> None:
    """Refuse ``--block-size`` in one line for a release of ``engine`` without the flag it sets (``BLOCK_FLAGS``,
    ``core.engine.flags``): SGLang's ``--page-size`` is first in 0.4.4 (``ServerArgs.page_size``; 0.4.0-0.4.3.post4
    page by one token, ``core.engine.sglang_padding``). The release is the one typed, else the generation's latest."""
    from mha_cli.core.engine.flags import setting_refusal
    from mha_cli.core.engine.generations import generation

    if engine not in BLOCK_FLAGS:
        return
    chosen = generation(generation_id, engine)  # type: ignore[arg-type]
    refusal = setting_refusal("--block-size", engine, chosen, typed, BLOCK_FLAGS[engine])
    if refusal is not None:
        raise BadInputError(refusal)


def for_local_ranks(base: DeploymentSpec | None, tp: int | None) -> DeploymentSpec | None:
    """``base`` for ``mha verify`` running ``tp`` ranks on this machine: when tp is given, the config's target and
    tp no longer choose the split (a design for one a100 may still be verified at --tp 2)."""
    if tp is None or base is None:
        return base
    return base.model_copy(update={"target": None, "tp": None})


def context_notes(model: ModelSpec, deployment: DeploymentSpec) -> list[str]:
    """``mha kv``'s warnings: ``deployment_warnings``, an odd rotated width (``mha check``'s hard rule MHA095, which
    check reports itself) and the allocation a fixed state is priced by."""
    from mha_cli.core.rotary_width import odd_rotary_width

    convention = state_convention_note(model, deployment)
    emulated = emulated_step_note(deployment)
    odd = odd_rotary_width(model)
    rotary = [] if odd is None else [f"{odd[0]} (`mha check`'s MHA095; the bytes are priced as given)"]
    notes = deployment_warnings(model, deployment) + rotary + ([] if emulated is None else [emulated])
    return notes + ([] if convention is None else [convention])


def emulated_step_note(deployment: DeploymentSpec) -> str | None:
    """Why ``mha kv`` shows no step latency where vLLM emulates the weight format on the target
    (``core.engine.quant_capability.emulated_step_refusal``; review 398 #3: the latency line went missing unsaid)."""
    if not deployment.target:
        return None
    from mha_cli.core.engine.quant_capability import deployment_step_refusal

    refusal = deployment_step_refusal(deployment, resolve_target(deployment.target).target)
    return None if refusal is None else f"no step latency: {refusal}"


AUTO_FP16_FROM = (0, 10)
"""The oldest vLLM read whose ``--dtype auto`` falls back to fp16 by itself on a device without bf16
(``_resolve_auto_dtype``, with ``CudaPlatform.supported_dtypes`` listing fp16 and fp32 below capability 8.0: vllm/config.py
in 0.10.0, vllm/config/model.py in 0.13.0 and 0.32.0; trial 366 #7 found 0.10's); earlier releases and the other
engines are told to run fp16 (``--dtype half``)."""


def falls_back_to_fp16(deployment: DeploymentSpec) -> bool:
    """Whether the engine priced (vLLM from ``AUTO_FP16_FROM``; None: the latest read) runs a bf16 model in fp16
    by itself on a device without bf16, so that a bf16 left to its default needs no word."""
    from mha_cli.core.engine.settings import release_in_force

    if deployment.engine not in (None, "vllm"):
        return False
    release = release_in_force(deployment)  # None: the latest generation, open-ended
    return release is None or release[:2] >= AUTO_FP16_FROM


def vllm_runs_float32(model: ModelSpec, engine: str | None, target: Target) -> bool:
    """Whether vLLM (``engine`` None or vllm) runs ``model`` in float32 on ``target``: no bf16 there, and a family
    vLLM never runs in fp16 (``FLOAT16_REFUSED``), so its ``--dtype auto`` gives float32."""
    return not target.bf16_native and model.family in FLOAT16_REFUSED and engine in (None, "vllm")


def refuse_float16_refused_family(deployment: DeploymentSpec, model: ModelSpec) -> None:
    """One line where vLLM would run ``model`` in float32 on the deployment's target (``vllm_runs_float32``) while
    16-bit weights are priced: ``mha plan`` prices what its line runs (trial 366 #3: Gemma 3 on a T4 was priced in
    bf16, its line running float32 out of memory)."""
    if deployment.target is None or deployment.weight_dtype not in ("bf16", "fp16"):
        return
    if not vllm_runs_float32(model, deployment.engine, resolve_target(deployment.target).target):
        return
    raise BadInputError(
        f"{deployment.target} has no bf16 and vLLM never runs {model.family} in fp16 (numerical instability): its"
        f" --dtype auto gives float32 there, not the {deployment.weight_dtype} priced; price it with --weight-dtype"
        " fp32 (the cache follows), or plan it on a GPU with bf16"
    )


def context_warning(model: ModelSpec, seq_len: int) -> str | None:
    """That ``seq_len`` is past the context ``model`` was trained (or designed) for, where it is (``mha kv``, ``check``
    and ``verify`` say it alike); None otherwise."""
    if not model.context_length or seq_len <= model.context_length:
        return None
    trained = "the design was made" if model.source == "mha recommend" else f"{model.name} was trained"
    return f"seq_len {seq_len:,} exceeds the {model.context_length:,} tokens {trained} for"


def _calibrated_offline(deployment: DeploymentSpec) -> bool:
    """An AWQ or GPTQ format priced where nothing says how the checkpoint stores its weights (no quantization_config,
    no tensor headers, no GGUF file, none mha could not read): no engine makes those on loading. Other formats some
    vLLM makes online (``--quantization fp8``, 0.22's ``fp8_per_block`` and ``int8_per_channel_weight_only``, 0.29's
    ``nvfp4_per_token``), so they are not said here (review 363 #3-#5)."""
    if deployment.weight_scheme is not None or deployment.checkpoint_headers is not None:
        return False
    if deployment.checkpoint_unread is not None:
        return False
    return deployment.weight_dtype.startswith(("awq", "gptq"))


def deployment_warnings(model: ModelSpec, deployment: DeploymentSpec) -> list[str]:
    """Warnings about the deployment (``mha kv`` and ``mha check``, which counts them): a context longer than the
    model was trained for, an MLA-only setting on a model without MLA, a bf16 plan on a target without bf16, weights
    the parameter count leaves out."""
    notes = []
    past = context_warning(model, deployment.seq_len)
    if past is not None:
        notes.append(past)
    has_state = model.recurrent is not None or (model.attention.mla is not None and model.attention.mla.indexer)
    if not has_state and "state_convention" in deployment.model_fields_set:
        notes.append(
            f"state_convention {deployment.state_convention} ignored: {model.name} has no fixed-state layer and no"
            " indexer key, so both conventions price it alike"
        )
    limits = deployment.limit_mm_per_prompt or {}
    if model.vision is not None and limits:
        from mha_cli.core.engine.encoder_profile import model_modalities

        read = model_modalities(model.vision)
        unread = [f"{modality}={count}" for modality, count in limits.items() if modality not in read]
        if unread:
            notes.append(
                f"limit_mm_per_prompt {', '.join(unread)} ignored: {model.name}'s tower reads {' and '.join(read)}"
                " only, and vLLM sizes the modalities a model reads (multimodal/processing/context.py"
                " allowed_mm_limits, 0.32.0)"
            )
    if model.attention.mla is None and "mla_cache" in deployment.model_fields_set:
        notes.append(
            f"mla_cache {deployment.mla_cache}: {model.name} is {model.attention.variant}, not MLA, so its own cache is"
            f" the same either way; only an MLA at its shape (`mha kv`'s variants table) is priced {deployment.mla_cache}"
        )
    stored = deployment.checkpoint_format
    if stored is not None and deployment.weight_dtype != stored:
        notes.append(
            f"weights priced in {deployment.weight_dtype} (--weight-dtype), not as the checkpoint stores them ({stored}):"
            f" serving them so needs a checkpoint stored in {deployment.weight_dtype}"
        )
    elif stored is None and _calibrated_offline(deployment):
        notes.append(  # trial 357 #5: plan's launch note said it, kv and check did not
            f"weights priced in {deployment.weight_dtype} (--weight-dtype): AWQ and GPTQ weights are calibrated"
            f" offline, so serving them so needs a checkpoint stored in {deployment.weight_dtype}"
        )
    if deployment.target:
        target = resolve_target(deployment.target).target
        asked = {"weight_dtype": deployment.weight_dtype, "kv_dtype": deployment.kv_dtype}
        if falls_back_to_fp16(deployment):  # vLLM runs the bf16 default in fp16 there by itself: only a flag's
            asked = {name: value for name, value in asked.items() if name in deployment.model_fields_set}
        if vllm_runs_float32(model, deployment.engine, target):  # fp16 is no way out for it
            if deployment.weight_dtype != "fp32":
                notes.append(
                    f"{target.id} has no bf16 and vLLM never runs {model.family} in fp16 (numerical instability): its"
                    " --dtype auto gives float32 there, twice these bytes; price it with --weight-dtype fp32"
                    " --kv-dtype fp32"
                )
        else:
            notes += bf16_notes(target, **asked)
    if mixer_weights_note(model) is not None:
        notes.append(mixer_weights_note(model))
    uncounted = family_weights_note(model)
    if uncounted is not None:
        notes.append(uncounted)
    return notes


def state_convention_note(model: ModelSpec, deployment: DeploymentSpec) -> str | None:
    """Which allocation a fixed state and an indexer key are priced by (None for a model with neither, or whose
    state both allocate alike: MiniMax's typed lightning state has no conv)."""
    from mha_cli.core.kv import state_bytes_per_layer

    parts = []
    engine = deployment.state_convention == "engine"
    kv_dtype = deployment.kv_dtype
    differs = state_bytes_per_layer(model, kv_dtype, convention="engine") != state_bytes_per_layer(
        model, kv_dtype, convention="transformers"
    )
    if model.recurrent is not None and differs:
        kda = model.recurrent.kind == "kda"  # trial 392 #6: KDA was named on models without it
        parts.append(
            "fixed state as vLLM allocates it (conv_kernel - 1 conv columns; "
            + (
                "KDA's recurrent state in fp32)"
                if kda
                else "a recurrent state the config does not type in the model dtype)"
            )
            if engine
            else "fixed state as transformers' cache holds it (conv_kernel conv columns; the recurrent state in fp32)"
        )
    if model.attention.mla is not None and model.attention.mla.indexer is not None:
        parts.append(
            "indexer key in fp8 with a 4-byte scale per 128 values (vLLM, SGLang)"
            if engine
            else "indexer key in the KV dtype (transformers)"
        )
    if not parts:
        return None
    other = "transformers" if engine else "engine"
    return f"{' and '.join(parts)}; --state-convention {other} for the other"


MIXER_WEIGHTS_NOTE: dict[str, str] = {}
"""Said wherever a model with fixed-state layers of these kinds is priced: what ``count_params`` still misses of
the family (measured with the families' transformers config classes, ``tests/test_family_weights.py``). None
today: Mamba (Jamba, its MoE on every other layer), Mamba-2 (Falcon-H1, Granite-4.0-H), lightning attention
(MiniMax), KDA (Kimi-Linear) and Gated DeltaNet (Qwen3-Next, its attention's output gate counted) count exactly."""


def family_weights_note(model: ModelSpec) -> str | None:
    """What ``count_params`` leaves out of the model's registered family (``Family.uncounted``), if anything."""
    if model.family is None:
        return None
    from mha_cli.core.families import family

    found = family(model.family)
    return None if found is None else found.uncounted


def mixer_weights_note(model: ModelSpec) -> str | None:
    """``MIXER_WEIGHTS_NOTE`` for ``model``'s mixer kind, or None when its weights count exactly (or it has none)."""
    return None if model.recurrent is None else MIXER_WEIGHTS_NOTE.get(model.recurrent.kind)
