"""The result of ``mha kv``: a model's KV cache, weights and memory plan under one deployment."""

from pydantic import computed_field

from mha_cli.core.cost.latency import StepLatency, latency_or_none
from mha_cli.core.deployment import context_notes
from mha_cli.core.dtypes import storage_format
from mha_cli.core.engine.plan import EnginePlan
from mha_cli.core.engine_warnings import engine_warnings
from mha_cli.core.errors import MhaError
from mha_cli.core.fit import deployment_judge, price_deployment
from mha_cli.core.header_weights import header_notes
from mha_cli.core.kv import KvFootprint, comparable_kv_dtype, footprint_for
from mha_cli.core.memory import MemoryPlan, plan_memory
from mha_cli.core.params import ParamBreakdown
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.sources import ModelSource
from mha_cli.core.variants import variant_options
from mha_cli.core.ways import KV_FLAGS, WayOut, settle
from mha_cli.core.weight_bytes import WeightSource, weights_source


class VariantRow(Record):
    """The same shape under another projection: its cache and how it compares with MHA."""

    label: str
    variant: str
    n_kv_heads: int | None
    """None for MLA, whose cache is a latent, not heads (as ``mha recommend``'s alternatives say: trial 334 #6)."""
    is_current: bool
    note: str
    bytes_per_token: int
    total_bytes: int
    fraction_of_mha: float
    max_sequences: int | None


class KvReport(Record):
    """Everything ``mha kv`` reports; ``bytes_per_token`` and ``total_bytes`` are the stable keys."""

    source_kind: str
    """``preset``, ``config`` (our config file), ``hf-config`` (a Hugging Face config.json or model folder),
    ``hf-cache`` (a Hugging Face id, its config.json from the local cache), ``hf-shipped`` (a Hugging Face id not
    cached, the published config.json mha ships for it: ``core.shipped_configs``) or ``gguf`` (a GGUF file)."""
    source: str
    """Where the model was read: a preset's name as given, or the file's path (for a Hugging Face id, its
    config.json in the local Hugging Face cache; the id is ``model.name``)."""
    assumptions: list[str]
    """Defaults the importer filled in (HF config.json), and where the weights come from when the checkpoint's
    safetensors headers price them (a total that disagrees with the config's count named)."""
    warnings: list[str]
    """Things a person should know about these numbers (e.g. a context beyond the model's)."""
    model: ModelSpec
    deployment: DeploymentSpec
    params: ParamBreakdown
    weight_bytes: int
    """All weights in the deployment's weight dtype."""
    kv: KvFootprint
    memory: MemoryPlan | None
    ways_out: list[WayOut]
    """When the plan does not fit: the changes that make it fit, each priced again before it is kept
    (``core.ways.settle``), or one ``none: ...`` entry; empty when it fits."""
    variants: list[VariantRow]
    latency: StepLatency | None = None
    """With a target: the cost model's decode step and prefill on its prior, with their bounds (``mha plan`` for
    latency under load)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def weights_from(self) -> WeightSource:
        """Where ``weight_bytes`` comes from: ``checkpoint headers`` (the model folder's safetensors headers,
        ``deployment.checkpoint_headers``) or ``config`` (the weight inventory)."""
        return weights_source(self.deployment, self.deployment.weight_dtype)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def engine(self) -> EnginePlan | None:
        """The serving engine's plan on one rank of one replica (``memory.engine``); None without a target."""
        return self.memory.engine if self.memory is not None else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def bytes_per_token(self) -> int:
        """All layers, one sequence, every layer holding the token, at the KV dtype."""
        return self.kv.bytes_per_token

    @computed_field  # type: ignore[prop-decorator]
    @property
    def state_bytes_per_seq(self) -> int:
        """Fixed state of linear-attention / state-space layers per sequence, the whole model (0 without them)."""
        return self.kv.state_bytes_per_seq

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_bytes(self) -> int:
        """seq x batch on one tp rank (the whole batch; under replicas a device holds ``memory.kv_bytes_per_device``),
        K/V and fixed state: windows, paging and per-rank division applied."""
        return self.kv.total_bytes


def build_kv_report(source: ModelSource, deployment: DeploymentSpec) -> KvReport:
    """Price ``source``'s KV cache (and, with a target, its memory plan) under ``deployment``."""
    model = source.model
    priced = price_deployment(model, deployment)
    target, tp = priced.target, priced.tp

    rows: list[VariantRow] = []
    # no K/V to project, or (Gemma 4) two head geometries one KV head count cannot restate
    options = [] if model.attention_free or model.attention.per_kind_geometry else variant_options(model)

    def priced_as(option_model: ModelSpec) -> DeploymentSpec:
        """fp8_ds_mla is an MLA layout: the same shape without MLA is priced in plain fp8."""
        return deployment.model_copy(update={"kv_dtype": comparable_kv_dtype(option_model, deployment.kv_dtype)})

    mha_bytes = next(
        (footprint_for(o.model, priced_as(o.model), 1).bytes_per_token for o in options if o.variant == "MHA"), 0
    )
    for option in options:
        try:
            option_kv = footprint_for(option.model, priced_as(option.model), tp)
        except MhaError:  # this tp does not divide this option's heads
            continue
        option_plan = (
            plan_memory(
                target, model=option.model, weight_dtype=deployment.weight_dtype, kv=option_kv, deployment=deployment
            )
            if target is not None
            else None
        )
        rows.append(VariantRow(
            label=option.label, variant=option.variant, is_current=option.is_current,
            n_kv_heads=None if option.variant == "MLA" else option.n_kv_heads,
            note=_note(_naive_note(option.note, option.variant, deployment), option_kv.kv_dtype, deployment.kv_dtype),
            bytes_per_token=option_kv.bytes_per_token, total_bytes=option_kv.total_bytes,
            fraction_of_mha=option_kv.bytes_per_token / mha_bytes if mha_bytes else 1.0,
            max_sequences=option_plan.max_sequences if option_plan else None,
        ))  # fmt: skip
    return KvReport(
        source_kind=source.kind,
        source=source.origin,
        assumptions=[*source.assumptions, *header_notes(model, deployment)],
        warnings=[*context_notes(model, deployment), *engine_warnings(model, priced.deployment, priced.memory)],
        model=model,
        deployment=priced.deployment,
        params=priced.params,
        weight_bytes=priced.weight_bytes,
        kv=priced.kv,
        memory=priced.memory,
        ways_out=settle(priced.ways, deployment_judge(model, deployment, KV_FLAGS), KV_FLAGS),
        variants=rows,
        latency=None if priced.memory is None else latency_or_none(model, priced.memory, priced.deployment),
    )


def _naive_note(note: str, variant: str, deployment: DeploymentSpec) -> str:
    """An MLA row's note, saying so when --mla-cache naive prices it as decompressed per-head K and V."""
    if variant != "MLA" or deployment.mla_cache != "naive":
        return note
    return f"{note}; cached naive: per-head K and V (--mla-cache naive)"


def _note(note: str, priced_in: str, asked: str) -> str:
    """The option's note, saying so when it was priced in another format than the one asked for."""
    if priced_in == storage_format(asked).name:
        return note
    why = "nvfp4 is refused with MLA" if asked == "nvfp4" else f"{asked} is an MLA layout"
    return "; ".join(filter(None, [note, f"priced in {priced_in} ({why})"]))
