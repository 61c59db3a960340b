"""The tables of ``docs/supported.md``, generated from the registries the commands read.

Targets (``core.targets``), serving engines and their defaults (``core.engine.settings``), KV-cache and weight
formats (``core.dtypes``, ``core.weight_formats``), model presets (``core.presets``) and decoder families
(``core.families.support``). Each table is a block of the page that ``python -m mha_cli.cli.docs_gen`` rewrites and
``tests/test_docs.py`` compares, so a new target, format, preset or family shows up in the page or fails the test.
Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable

from mha_cli.core import dtypes, weight_formats
from mha_cli.core.cost.priors import generation_prior
from mha_cli.core.cost.profile import OWN_GPU_BAND, band_words, measured_within
from mha_cli.core.engine.generations import ENGINE_ALIASES, GENERATIONS, LATEST
from mha_cli.core.engine.settings import EngineSettings, resolve_settings
from mha_cli.core.errors import ReleaseBeforeGpuError
from mha_cli.core.families.support import family_support
from mha_cli.core.kv import kv_footprint
from mha_cli.core.markdown import cell, markdown_table
from mha_cli.core.params import count_params
from mha_cli.core.presets import checkpoint_weights, get_preset, preset_names
from mha_cli.core.quantities import format_count
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import ALIASES, load_targets

ENGINE_EXAMPLE_TARGETS = ("b200", "h100-sxm", "a100-80gb", "rtx-4090")
"""GPUs on which the engines' defaults are shown: they differ by device memory (vLLM treats the A100 apart, and from
0.21 gives a GPU of 160 GiB or more a larger step)."""


def _aliases_of(name: str, aliases: dict[str, str]) -> str:
    return ", ".join(f"`{alias}`" for alias, target in aliases.items() if target == name and alias != name)


def targets_table() -> str:
    """Every row of the hardware database, with the aliases that name it and its cost-model band: the band a plan
    without --engine prints (vLLM's latest generation's prior)."""
    rows = []
    for target in load_targets().values():
        prior = generation_prior(LATEST["vllm"].id, target)
        whose = prior.source.partition(OWN_GPU_BAND)[2].partition("'s ")[0]  # "this GPU", "mi300x", or none
        marker = " (own)" if whose == "this GPU" else f" ({whose}'s)" if whose else ""
        if prior.fitted is None:
            marker = " (default constants)"
        bf16 = f"{target.bf16_tflops_dense:g}" + ("" if target.bf16_native else " (fp16)")
        rows.append(
            [
                f"`{target.id}`" + (" !" if target.uncertain else ""),
                cell(target.name),
                f"{target.torch_memory_gib:.2f}" + ("" if target.device_memory_measured else " ~"),
                f"{target.memory_bandwidth_gbs:g}",
                bf16,
                f"{target.fp8_tflops_dense:g}" if target.fp8_tflops_dense else "-",
                f"{band_words(*measured_within(prior.band, 'prior', prior.source))}{marker}",  # as a plan says it
                _aliases_of(target.id, ALIASES),
            ]
        )
    header = ["id", "name", "memory GiB", "GB/s", "bf16 TFLOP/s", "fp8 TFLOP/s", "prior's band", "aliases"]
    return markdown_table(header, rows)


def engines_table() -> str:
    """Each engine generation's defaults on a few GPUs when no option sets them."""
    targets = load_targets()
    rows = []
    for generation in GENERATIONS:
        for target_id in ENGINE_EXAMPLE_TARGETS:
            deployment = DeploymentSpec(engine=generation.engine, engine_generation=generation.id)
            try:
                settings = resolve_settings(deployment, targets[target_id], 1)
            except ReleaseBeforeGpuError:  # a release before the GPU (core.engine.blackwell_releases)
                rows.append([f"`{generation.id}`", f"`{target_id}`", "does not run there", "-", "-", "-"])
                continue
            rows.append(
                [
                    f"`{generation.id}`",
                    f"`{target_id}`",
                    f"{settings.utilisation:g}",
                    f"{settings.max_num_batched_tokens:,}",
                    _sequences(settings),
                    str(settings.block_size),
                ]
            )
    header = ["generation", "GPU", "memory share", "tokens per step", "sequences per step", "block tokens"]
    return markdown_table(header, rows)


def _sequences(settings: EngineSettings) -> str:
    """The running-request cap; SGLang's default is set by its pool (``core.engine.sglang_running``): its ceiling."""
    if settings.engine == "sglang" and settings.running_requested is None:
        return f"at most {settings.max_num_seqs:,} (by its pool)"
    return f"{settings.max_num_seqs:,}"


def generations_table() -> str:
    """Each engine generation: the releases it covers, an ``--engine`` value that picks it, what sets it apart."""
    rows = []
    for generation in GENERATIONS:
        names = ", ".join(f"`{alias}`" for alias, name in ENGINE_ALIASES.items() if name == generation.engine)
        rows.append(
            [
                f"`{generation.id}`",
                names,
                generation.releases,
                f"`{generation.example}`",
                generation.differs,
                f"`{generation.source}`",
            ]
        )
    header = ["generation", "engine names", "releases", "`--engine`", "what sets it apart", "read in"]
    return markdown_table(header, rows)


def kv_formats_table() -> str:
    """The KV-cache formats with their bytes and scales."""
    built = set(dtypes.BUILDABLE)
    rows = [
        [
            f"`{fmt.name}`",
            f"{fmt.bits}",
            cell(fmt.description),
            _aliases_of(fmt.name, dtypes.DTYPE_ALIASES),
            "yes" if fmt.name in built else "no (priced only)",
        ]
        for fmt in [*dtypes.FORMATS.values(), *dtypes.KV_ONLY_FORMATS.values()]
    ]
    return markdown_table(["`--kv-dtype`", "bits a value", "stored", "aliases", "built in torch"], rows)


def weight_formats_table() -> str:
    """The weight formats with the weights they cover and what they store."""
    covers = {"all": "every weight", "linear": "linear layers", "experts": "routed experts"}
    rows = [
        [
            f"`{fmt.name}`",
            f"{fmt.nominal_bits:.3g}",
            covers[fmt.scope],
            cell(fmt.description),
            _aliases_of(fmt.name, weight_formats.WEIGHT_ALIASES),
        ]
        for fmt in weight_formats.FORMATS.values()
    ]
    return markdown_table(["`--weight-dtype`", "bits a weight", "covers", "stored", "aliases"], rows)


def presets_table() -> str:
    """Every model preset: its family, shape, parameters, bf16 cache per token and the checkpoint's weight format."""
    rows = []
    for name in preset_names():
        model = get_preset(name)
        kv = kv_footprint(model, seq_len=1)
        heads = (
            f"{model.attention.n_heads}/{model.attention.n_kv_heads}"
            if model.attention.n_kv_heads is not None
            else f"{model.attention.n_heads}/latent"
        )
        rows.append(
            [
                f"`{name}`",
                f"`{model.family}`",
                model.attention.variant,
                format_count(count_params(model).total),
                f"{model.d_model} x {model.n_layers}",
                heads,
                f"{model.context_length:,}" if model.context_length else "-",
                f"{kv.bytes_per_token:,}",
                f"{kv.state_bytes_per_seq:,}" if kv.state_bytes_per_seq else "-",
                checkpoint_weights(name) or "bf16",
                cell(model.source or ""),
            ]
        )
    header = ["preset", "family", "variant", "params", "width x layers", "heads / KV", "context",
              "KV B / token (bf16)", "state B / seq", "weights", "source"]  # fmt: skip
    return markdown_table(header, rows)


def families_table() -> str:
    """The support matrix of ``mha families``, one row per ``model_type``."""
    rows = []
    for row in family_support():
        decoder = "not built" if not row.built else f"{len(row.differences)} listed" if row.differences else "-"
        equal = "-" if row.equal_to_transformers is None else "block" if "block" in row.equal_to_transformers else "yes"
        rows.append([f"`{row.model_type}`", cell(row.priced), decoder, equal, cell(row.verify)])
    return markdown_table(["model_type", "priced", "decoder differs", "equal to transformers", "mha verify"], rows)


SUPPORTED_BLOCKS: dict[str, Callable[[], str]] = {
    "targets": targets_table,
    "engine-generations": generations_table,
    "engines": engines_table,
    "kv-formats": kv_formats_table,
    "weight-formats": weight_formats_table,
    "presets": presets_table,
    "families": families_table,
}
"""The generated blocks of ``docs/supported.md``, by name."""
