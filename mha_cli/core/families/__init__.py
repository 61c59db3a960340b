"""The family registry: what ``mha`` knows of each decoder family a config.json may name, one module a family.

As transformers and vLLM keep ``models/<family>``, each family ``mha`` reads has a module in
``core.families.models`` (named as transformers' folder: ``gemma3`` holds ``gemma3`` and ``gemma3_text``) that
defines ``FAMILY``, a ``Family`` record: how its config.json spells each field, the defaults of its transformers
config class, its layer kinds and fixed-state mixer, its decoder's layout (MLP, norms, biases, tying, RoPE) and what
the torch decoder does not reproduce of it, and how transformers names its weights. ``core.hf_import`` reads a
config.json through it, ``core.presets`` takes a preset's layout from it, ``nn.build_model`` its omissions and
``nn.hf_state_dict`` its weight names; ``mha families`` lists it (``core.families.support``). Adding a family is
adding a module (and its fixture in the tests).

A family module is imported only when a config names it (``family``): ``mha kv`` pays for one module, not fifty.
Pure Python.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind
    from mha_cli.core.weight_layout import WeightLayout

NOTHING: Mapping[str, Any] = MappingProxyType({})
"""An empty, read-only mapping: the default of the mapping fields (a record's defaults are shared)."""


class _AnyValue:
    def __repr__(self) -> str:
        return "any value"


ANY_VALUE: Any = _AnyValue()
"""In ``Family.left_unread``: a field no figure depends on, whatever its value (MLA's unused ``head_dim``)."""
MLA_UNREAD: Mapping[str, Any] = MappingProxyType(
    {"num_key_value_heads": ANY_VALUE, "head_dim": ANY_VALUE, "qk_head_dim": ANY_VALUE, "moe_layer_freq": 1}
)
"""``Family.left_unread`` of the MLA families (DeepSeek's and those built on its code): their config classes carry a KV
head count and head widths that MLA attention does not use (its K and V come from the latent; ``qk_head_dim`` is
derived). Their remote code and vLLM (``DeepseekV2DecoderLayer``: ``layer_idx % moe_layer_freq == 0``) read
``moe_layer_freq``, transformers' classes do not: every checkpoint has 1, which both build; another is refused, as the
engine's layers and transformers' would differ (trial 316)."""

WINDOW_FIELDS = frozenset({"sliding_window", "attention_chunk_size", "use_sliding_window"})
"""config.json fields that window attention (a local window, chunks, Qwen's switch of the window), read for a family
only where its transformers model applies them (``Family.window_fields``)."""
SLIDES = frozenset({"sliding_window"})
"""``Family.window_fields`` of a family whose model slides a window (Mistral, Gemma 2)."""
SWITCHED_SLIDES = frozenset({"sliding_window", "use_sliding_window"})
"""``Family.window_fields`` of Qwen2's kind: a window only where ``use_sliding_window`` (default False) is on."""

LayerKindsReader = Callable[["ConfigReader", int], "list[LayerKind] | None"]
"""(reader, n_layers) -> each layer's kind as the family's config class derives it, or None (one kind)."""
StateReader = Callable[["ConfigReader", int, dict[str, Any]], "dict[str, Any] | None"]
"""(reader, d_model, fields read so far) -> the ``recurrent`` block of its fixed-state layers."""
KvHeadsReader = Callable[["ConfigReader", int], "int | None"]
"""(reader, n_heads) -> KV heads per layer, or None to read the standard fields."""
WidthReader = Callable[["ConfigReader"], "int | None"]
"""(reader) -> the dense MLP width, or None to read the standard fields."""
FieldsHook = Callable[["ConfigReader", dict[str, Any]], None]
"""(reader, fields read so far) -> None: the family's own reading of fields the standard reader read otherwise."""
ConfigView = Callable[[dict[str, Any], str], dict[str, Any]]
"""(config.json, origin) -> the same config in the standard fields, for a family that spells its layers otherwise."""


class Family(NamedTuple):
    """What ``mha`` knows of one decoder family (a ``models/<family>`` folder of transformers)."""

    model_types: tuple[str, ...]
    """The ``model_type`` values its config.json files carry (first: the folder's own)."""
    config_class: str
    """transformers' config class (and version), whose defaults fill the fields a config.json leaves out."""
    defaults: Mapping[str, Any] = NOTHING
    """Those defaults, for the fields a figure reads (gemma-3-4b-it's text_config has no head counts)."""
    old_names: tuple[str, ...] = ()
    """Older ``model_type`` spellings early config.json files carry (Falcon's ``RefinedWebModel``)."""
    spellings: Mapping[str, tuple[str, ...]] = NOTHING
    """Other keys for ``layers``, ``heads``, ``d_ff``, ``activation`` (read before the standard ones), ``window``,
    ``experts``, ``experts_per_token`` or ``shared_experts``, read for this family only (MPT's ``n_layers``; Mamba-2's
    ``num_heads`` is a state-space head count, so such keys are never read for every family)."""
    layout: Mapping[str, Any] = NOTHING
    """``ModelSpec`` fields its config.json does not spell out: MLP kind, norm kind and count, biases, q/k norm,
    and arithmetic its modeling code fixes (Gemma's norm weight offset and embedding scale, GPT-Neo's unscaled
    attention scores)."""
    tied_by_default: bool = False
    """``tie_word_embeddings`` of its config class, for a config.json that leaves it out."""
    window_fields: frozenset[str] = frozenset()
    """The fields of ``WINDOW_FIELDS`` its transformers model applies: its config class defines the field and its
    modeling code (or the config class, deriving ``layer_types`` from it) reads it. The others are not read: a
    config.json carrying one (Llama's or GPT-2's stray ``sliding_window``) is priced as transformers builds it,
    without it, and names it as not read. ``tests/test_family_windows.py`` checks every family against the
    installed transformers."""
    local_cycle: tuple[LayerKind, ...] = ()
    """The cycle of local and global layers its modeling code runs when a config has a window but lists no
    ``layer_types`` (Gemma 2 alternates); empty: every layer takes the window."""
    local_cycle_note: str = ""
    """The assumption said when ``local_cycle`` is used."""
    layer_kinds: LayerKindsReader | None = None
    """Its own derivation of layer kinds from its fields (Qwen2's max_window_layers, Llama-4's no-RoPE interval)."""
    fixed_state: str | None = None
    """The mixer of its layers that keep a fixed per-sequence state (``Mamba-2``, ``Gated DeltaNet``), if any."""
    attention_free: bool = False
    """No layer attends (Mamba, Mamba-2, Falcon-Mamba): every layer is its fixed-state mixer, the config has no
    attention head count, and nothing is cached per token (``ModelSpec.attention_free``)."""
    state: StateReader | None = None
    """Reads that mixer's ``recurrent`` block from the family's own fields."""
    kv_heads: KvHeadsReader | None = None
    """Its own reading of the KV head count (Falcon's MQA flags, MPT's attn_config); None from it: the standard one."""
    dense_width: WidthReader | None = None
    """Its own reading of the dense MLP width (MPT's expansion_ratio); None from it: the standard one."""
    read_fields: FieldsHook | None = None
    """Reads, last, what the family spells its own way (StarCoder2's ``use_bias``, Llama-4's shared expert)."""
    config_view: ConfigView | None = None
    """Rewrites its config.json into the standard fields before anything is read (Nemotron-H's blocks, each one
    mixer or one MLP, as the layers of their mixers); None: read as written."""
    view_note: Callable[[Mapping[str, Any], Mapping[str, Any]], str | None] | None = None
    """What ``config_view`` changed of the config as written that a figure depends on (Gemma 4's last layer forced
    full), said among the assumptions: (as written, as viewed) -> the line, or None."""
    use_qk_norm_is_rmsnorm: bool = True
    """Whether its ``use_qk_norm: true`` is a per-head RMSNorm of q and k with weights (not Llama-4's L2 norm)."""
    interleaved_rope: bool = False
    """Its RoPE rotates interleaved pairs (x[0::2], x[1::2]), not rotate-half."""
    learned_positions: str | None = None
    """The field giving the rows of its learned position table (GPT-2's ``n_positions``); None: RoPE or none."""
    routing_defaults: Mapping[str, Any] = NOTHING
    """MoE routing its modeling code uses where the config.json leaves a field out."""
    routing_fixed: tuple[str, ...] = ()
    """Routing fields its modeling code hard-codes, whatever the config says (Mixtral renormalises the top k)."""
    gated_shared_expert: bool = False
    """A sigmoid gate (d_model -> 1) scales its shared expert's output (Qwen2-MoE)."""
    reads: frozenset[str] = frozenset()
    """Fields of ``hf_import.UNREAD_FIELDS`` this family's reader does read (DeepSeek-V3.2's indexer fields)."""
    refused: str | None = None
    """Why its configs are refused (a cache the standard fields misstate), or None."""
    names: tuple[str, ...] = ()
    """How preset and model names spell it (``gemma-2``), for a spec without a ``family``."""
    differences: tuple[str, ...] = ()
    """What ``nn.build_model`` does not reproduce of it, one sentence each (``DecoderLM.omitted``)."""
    unbuilt: str | None = None
    """Its layers ``mha verify`` does not build (``chunked attention``), besides unbuilt fixed-state mixers."""
    equal_test: str | None = None
    """The test comparing the decoder (or, where named, one block) with transformers' on the same weights."""
    uncounted: str | None = None
    """Weights of the family ``count_params`` leaves out, said wherever it is priced (DeepSeek-V3.2's indexer)."""
    weights: WeightLayout | None = None
    """How transformers names and lays out its weights, where not as Llama's (``nn.hf_state_dict``)."""
    left_unread: Mapping[str, Any] = NOTHING
    """Fields its config class has that no reader looks at, each with the value at which it changes no figure and
    nothing the decoder builds (its config class's default; ``ANY_VALUE`` where no value does, or where
    ``differences`` already says the decoder does not reproduce it). A config setting another value, or a field
    neither read nor listed here, is refused naming it (``core.hf_unread``)."""

    @property
    def name(self) -> str:
        return self.model_types[0]


EQUAL_BY_SWEEP = "tests/test_family_sweep.py::test_no_family_differs_from_transformers_without_saying_why (EQUAL)"
"""The ``equal_test`` of a family whose logits the decoder sweep finds equal to transformers' (its ``EQUAL`` set)."""

_MODELS = "mha_cli.core.families.models"


@cache
def family(model_type: str) -> Family | None:
    """The registered family whose config.json carries ``model_type`` (or an older spelling); None if none."""
    module_name = model_type.replace("-", "_").lower()
    candidates = [module_name, module_name.removesuffix("_text")]
    candidates += [OLD_NAMES[model_type]] if model_type in OLD_NAMES else []
    for candidate in candidates:
        if not candidate.isidentifier() or candidate.startswith("_"):  # "__init__" is the package, not a family
            continue
        try:
            module = importlib.import_module(f"{_MODELS}.{candidate}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{_MODELS}.{candidate}":
                raise  # a family module importing something missing is a bug, not an unknown family
            continue
        found = getattr(module, "FAMILY", None)
        if isinstance(found, Family) and (model_type in found.model_types or model_type in found.old_names):
            return found
    return None


@cache
def all_families() -> tuple[Family, ...]:
    """Every registered family, by name (imports every family module: for ``mha families`` and the tests)."""
    import pkgutil  # here, not at import: a command that reads one family does not pay for it

    from mha_cli.core.families import models

    found = [importlib.import_module(f"{_MODELS}.{m.name}").FAMILY for m in pkgutil.iter_modules(models.__path__)]
    return tuple(sorted(found, key=lambda f: f.name))


def known_model_types() -> set[str]:
    """Every ``model_type`` a registered family carries."""
    return {model_type for f in all_families() for model_type in f.model_types}


OLD_NAMES = {
    "RefinedWebModel": "falcon",
    "RefinedWeb": "falcon",
    "minimax_text_01": "minimax",
    "minimax_m1": "minimax",
}
"""Older ``model_type`` spellings and the module of their family (each family's ``old_names`` lists its own; this
index finds the module without importing them all; ``tests/test_families.py`` checks they agree)."""


def family_named(text: str) -> Family | None:
    """The family a preset or model name spells (``gemma-2-9b``: Gemma 2), the most specific match; None if none."""
    text = text.lower().replace("_", "-")
    matches = [(len(spelling), f) for f in all_families() for spelling in f.names if spelling in text]
    return max(matches, key=lambda match: match[0])[1] if matches else None
