"""A checkpoint's weight scheme: how each linear layer's weight is stored, as its ``quantization_config`` says.

``core.hf_quantization`` reads a compressed-tensors, NVIDIA ModelOpt or AMD Quark config into a ``WeightScheme``: an
ordered list of rules (a config group, a quantised layer, Quark's global config), each naming the modules it covers
and the ``MatrixLayout`` their weights take, and an ``ignore`` list whose modules stay bf16. ``core.weight_bytes``
asks it, tensor by tensor of the weight inventory, which layout a matrix is in, so a checkpoint whose layers differ
(experts in int4 and attention in bf16, fp8 down projections beside NVFP4 gates) is priced layer by layer.

Which rule covers a module, as vLLM's ``compressed_tensors`` (``find_matched_target``, ``should_ignore_layer``),
``modelopt`` (``exclude_modules``) and ``quark`` (``exclude``, ``layer_quant_config``) loaders decide it:

1. a module an ``ignore`` entry names stays bf16;
2. else the first rule that names the module itself;
3. else the first rule whose targets are a class of layer (``Linear``: every linear layer; for a routed expert, a
   rule targeting ``FusedMoE`` first);
4. else it is not quantised (bf16).

A named format whose config keeps modules unquantised (fp8's ``ignored_layers``, AWQ's ``modules_to_not_convert``,
...) is read by ``core.named_exclusions`` into the same list and rule: its plain names are compared as that format's
vLLM loader compares them (``NAMED_MATCHING``), and a layer's routed experts as the one ``FusedMoE`` module
``model.layers.N.mlp.experts`` those loaders see (``WeightScheme.fused_experts``).

A pattern names a module when it is ``re:<regex>`` and the regex matches vLLM's name of it from the start
(compressed-tensors' and Quark's ``re:`` prefix), when it holds ``*``, ``?`` or ``[`` and matches the whole name as a
shell glob (ModelOpt's and Quark's wildcards), or, a plain name, as the config's loader compares it (vLLM 0.19.1):

- compressed-tensors: only the name itself (``compressed_tensors/utils.py`` ``should_ignore_layer`` and
  ``find_matched_target`` through ``_is_equal_or_regex_match``: ``target == value``; a ``*`` is no wildcard there);
- ModelOpt: any name it is part of (``modelopt.py`` ``ModelOptQuantConfigBase.is_layer_excluded``: ``exclude_module
  in prefix`` after ``is_layer_skipped``'s exact match, then ``fnmatch``), so ``lm_head`` or ``model.layers.0.mlp``
  names every module whose name holds it (``model.layers.0.mlp.experts`` every expert of layer 0, as ModelOpt's
  mixed-precision config lists fused experts);
- Quark and the rest: the name itself or one of its parents.

Plain names and globs are matched on the checkpoint's spelling of a module, ``re:`` patterns on vLLM's
(``core.checkpoint_names``: the two differ from mha's own for Qwen3-Next's and Qwen3.5's Gated DeltaNet, under
``linear_attn``, and Qwen3.5's image-text wrapper). Elsewhere the names are mha's own (``core.inventory``: Llama's,
``model.layers.N.self_attn.q_proj``), which are the checkpoint's for Llama-like models; a routed expert is named as
checkpoints store experts one by one, ``model.layers.N.mlp.experts.E.gate_proj`` (DeepSeek, Qwen-MoE). A family whose
checkpoint names differ and are not spelled there (Mixtral's ``block_sparse_moe.experts.E.w1``, Nemotron-H's
``backbone.layers.B.mixer``, whose block index B is not mha's layer index) is matched on mha's names: the entries that
name none of the model's modules are reported (``unmatched``, said in the plan's assumptions) rather than silently
dropped; one naming a decoder layer mha cannot find is refused (``core.layer_entries``). Gemma 4's routed experts sit beside its dense MLP (``model.layers.N.experts.E.gate_proj``,
``model.layers.N.mlp.gate_proj``, as its checkpoints name them), and where a model's checkpoint spells its language
model as mha does, a pattern spelled from a multimodal checkpoint's text-model prefix (``model.language_model.``,
``language_model.model.``) is read as ``model.`` (``TEXT_MODEL_PREFIXES``). The
embedding and the LM head stay bf16 whatever the config says: vLLM's loaders quantise ``LinearBase`` and fused-MoE
layers, and its ``ParallelLMHead`` is neither.
"""

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from pydantic import ConfigDict, Field, PrivateAttr

from mha_cli.core.checkpoint_names import MHA_NAMES, ModuleNames
from mha_cli.core.compute_dtype import ComputeDtype, compute_dtype
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record, empty_list
from mha_cli.core.weight_formats import FORMATS, MatrixLayout, WeightFormat, WeightFormatName

LINEAR = "Linear"
"""The layer class a rule targets to cover every linear layer (compressed-tensors' ``targets: ["Linear"]``)."""
EXPERTS = "FusedMoE"
"""The layer class a rule targets to cover every routed expert, whatever its named targets say (vLLM's GPTQ loader
quantises a ``FusedMoE`` without reading ``modules_in_block_to_quantize``: ``core.named_exclusions``)."""


def _covered(targets: list[str]) -> str:
    """A rule's targets in words: those priced, and a layer class mha leaves in bf16 (``Embedding``) said so."""
    unpriced = [t for t in targets if is_layer_class(t) and t not in (LINEAR, EXPERTS)]
    priced = ", ".join(t for t in targets if t not in unpriced)
    if not unpriced:
        return priced
    return f"{priced} (not {', '.join(unpriced)}: the engines quantise linear layers alone; priced bf16)"


def is_layer_class(target: str) -> bool:
    """Whether a target names a class of layer (``Linear``, ``Embedding``) rather than modules: a capitalised word.
    Only ``Linear`` covers weights mha quantises; vLLM quantises no embedding."""
    return target[:1].isupper() and "." not in target and not target.startswith("re:")


class SchemeRule(Record):
    """One rule of a quantization config: the modules it covers and how their weights are stored."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    name: str
    """The config's name for it: a compressed-tensors group (``group_0``), a ModelOpt algorithm, Quark's ``global``."""
    targets: list[str]
    """Module names, ``re:`` patterns or globs it covers, or ``Linear`` for every linear layer."""
    format: WeightFormatName
    """The named format closest to it (``int4`` for any 4-bit integer group, ``fp8`` for any fp8 scale)."""
    value_bits: int
    """Bits of one stored weight (values packed, e.g. two 4-bit values a byte)."""
    scale_bytes: int = 0
    """Bytes of one scale (fp32 4, bf16 2, fp8 and e8m0 1)."""
    scale_rows: int = 0
    """Output rows one scale covers (0: all of them)."""
    scale_cols: int = 0
    """Inputs one scale covers (0: all of them): the group size."""
    zero_bits: int = 0
    """Bits of one zero point (asymmetric formats; 0 without)."""
    group_index: bool = False
    """An int32 group index per input (activation reordering, GPTQ's ``g_idx``)."""
    extra_bytes: int = 0
    """Bytes of per-matrix scalars: global and input scales, a stored shape."""
    description: str = ""
    """What it is, in words: ``int4 symmetric, group 128, bf16 scales``."""
    weight_only: bool = False
    """Its matmul takes 16-bit activations (W4A16): the engine multiplies in bf16 whatever ``format`` its weights are
    stored in (ModelOpt ``W4A16_NVFP4``: ``core.hf_quantization``)."""

    @property
    def compute(self) -> ComputeDtype:
        """The dtype its matmul multiplies in (``core.compute_dtype``): bf16 where ``weight_only``."""
        return "bf16" if self.weight_only else compute_dtype(self.format)

    @property
    def layout(self) -> MatrixLayout | WeightFormat:
        """The layout its matrices are priced in (``core.weight_formats``); a bitsandbytes format's own pricing (it
        quantises the flattened matrix: no ``MatrixLayout``)."""
        named = FORMATS[self.format]
        if named.layout is None:
            return named
        return MatrixLayout(
            self.value_bits, self.scale_bytes, self.scale_rows, self.scale_cols, self.zero_bits, self.group_index,
            self.extra_bytes,
        )  # fmt: skip


class WeightScheme(Record):
    """A checkpoint's quantization config, read: which rule stores each linear layer's weight."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    method: str
    """The config's ``quant_method``: ``compressed-tensors``, ``modelopt`` or ``quark``; or a named format's loader
    whose exclusion lists were read (``fp8``, ``awq``, ``gptq``, ``bitsandbytes``: ``core.named_exclusions``), which
    decides how a plain name matches (``pattern_regex``)."""
    format: WeightFormatName
    """The format of its main rule (the one on every linear layer, else the first): what names the scheme in tables,
    and what the cost model and flag suggestions read."""
    rules: list[SchemeRule]
    ignore: list[str] = Field(default_factory=empty_list)
    """Modules that stay bf16 (the config's ``ignore``, ``exclude_modules`` or ``exclude``; a named format's
    ``modules_to_not_convert``, ``ignored_layers``, ``llm_int8_skip_modules``, GPTQ's negative ``dynamic`` rules)."""
    fused_experts: bool = False
    """A layer's routed experts are matched as one module, ``model.layers.N.mlp.experts`` (vLLM's ``FusedMoE``, as the
    named formats' loaders judge it by its prefix), rather than expert by expert (compressed-tensors, ModelOpt)."""
    experts_ignore: bool = True
    """Whether ``ignore`` reaches the routed experts (vLLM's bitsandbytes loader quantises every ``FusedMoE``)."""
    experts_unquantised: bool = False
    """Whether the format's loader leaves every routed expert unquantised (bf16) whatever the rules say: it has no
    ``FusedMoE`` method (``fbgemm_fp8``: ``core.named_exclusions``)."""

    @property
    def quant_method(self) -> str:
        """The config's ``quant_method`` as vLLM compares ``--quantization`` with it: ``method``, but ``fbgemm_fp8``
        for an fbgemm fp8 scheme, whose names match as fp8's (the only scheme whose experts stay unquantised) while
        vLLM refuses ``--quantization fp8`` on it (trial 352 #3; ``core.vllm_quantization.pasted_format``)."""
        return "fbgemm_fp8" if self.experts_unquantised else self.method

    _matchers: "dict[ModuleNames, SchemeMatcher]" = PrivateAttr(default_factory=dict)

    def matcher(self, names: ModuleNames = MHA_NAMES) -> "SchemeMatcher":
        """The scheme's patterns compiled, remembering what each module resolved to (built once per scheme and
        spelling); ``names``: how the model's checkpoint and vLLM spell mha's module names."""
        if names not in self._matchers:
            self._matchers[names] = SchemeMatcher(self, names)
        return self._matchers[names]

    def rule_for(self, module: str, names: ModuleNames = MHA_NAMES) -> "SchemeRule | None":
        """The rule that stores ``module``'s weight (a name like ``model.layers.3.self_attn.q_proj``); None: bf16."""
        return self.matcher(names).rule_for(module)

    def unmatched(self, modules: Iterable[str], names: ModuleNames = MHA_NAMES) -> list[str]:
        """The ignore entries and named targets that name none of ``modules`` (a model's module names, mha's,
        spelled by ``names``)."""
        patterns = [*self.ignore, *(t for rule in self.rules for t in rule.targets if not is_layer_class(t))]
        left = {pattern: _regex(pattern_regex(read_text_model(pattern, names), self.method)) for pattern in patterns}
        for module in modules:
            fused = self.fused_experts and ".experts." in module
            for name in (module, module.rpartition(".experts.")[0] + ".experts") if fused else (module,):
                spelled = (names.checkpoint(name), names.engine(name))
                for pattern in [p for p, regex in left.items() if regex.match(spelled[p.startswith("re:")])]:
                    del left[pattern]
            if not left:
                break
        return list(left)

    def naming(self, patterns: Iterable[str], modules: Iterable[str]) -> list[str]:
        """Those of ``patterns`` (ignore entries or targets) that name one of ``modules``, spelled as written (a
        multimodal checkpoint's tower modules: ``visual.blocks.0.attn.qkv``, ``model.vision_tower...``)."""
        regexes = {pattern: _regex(pattern_regex(pattern, self.method)) for pattern in patterns}
        written = list(modules)
        return [pattern for pattern, regex in regexes.items() if any(regex.match(module) for module in written)]

    def describe(self) -> str:
        """One line: each rule with what it covers (a layer class other than Linear said to stay bf16: trial 278 #2),
        then what stays bf16."""
        rules = "; ".join(f"{_covered(rule.targets)}: {rule.description or rule.name}" for rule in self.rules)
        kept = f"; kept in bf16: {', '.join(self.ignore)}" if self.ignore else ""
        experts = "; routed experts in bf16 (the loader has no FusedMoE method)" if self.experts_unquantised else ""
        said = "head" in rules or any("lm_head" in pattern for pattern in self.ignore)  # a named format says it
        head = "" if said else HEAD_IN_BF16  # trial 299 #3
        return f"{self.method}, {rules}{kept}{experts}{head}"


HEAD_IN_BF16 = "; the LM head in bf16 (the engines quantise linear and expert layers only)"
"""Said where the ignore list does not keep ``lm_head``: a scheme that seems to cover it is priced bf16 there."""


class SchemeMatcher:
    """A scheme's ignore list and each rule's named targets compiled into one regular expression each, and the rule
    every module resolved to remembered: a 61-layer, 256-expert model names some 47,000 modules, matched once."""

    def __init__(self, scheme: WeightScheme, names: ModuleNames = MHA_NAMES) -> None:
        self.names = names
        self.ignore = _Patterns([read_text_model(p, names) for p in scheme.ignore], scheme.method)
        self.named = [
            (rule, _Patterns([read_text_model(t, names) for t in rule.targets if not is_layer_class(t)], scheme.method))
            for rule in scheme.rules
        ]
        self.by_class = next((rule for rule in scheme.rules if LINEAR in rule.targets), None)
        self.experts = next((rule for rule in scheme.rules if EXPERTS in rule.targets), self.by_class)
        self.fused, self.experts_ignore = scheme.fused_experts, scheme.experts_ignore
        self.experts_unquantised = scheme.experts_unquantised
        self.memo: dict[object, SchemeRule | None] = {}

    def rule_for(self, module: str) -> SchemeRule | None:
        """``WeightScheme.rule_for``."""
        if module not in self.memo:
            self.memo[module] = self._match(module)
        return self.memo[module]

    def rule_for_experts(self, prefix: str, projection: str, n_experts: int) -> SchemeRule | None:
        """The rule of every routed expert's ``projection`` under ``prefix`` (``model.layers.3.mlp``), each expert
        named ``{prefix}.experts.{e}.{projection}``. Raises ``BadInputError`` when the config treats the experts of
        one layer differently: mha prices a layer's experts alike."""
        key = (prefix, projection, n_experts)
        if key not in self.memo and self.fused:  # one FusedMoE module for the layer's experts
            self.memo[key] = self._match(f"{prefix}.experts", experts=True)
        if key not in self.memo:
            rules = [self._match(f"{prefix}.experts.{e}.{projection}", experts=True) for e in range(n_experts)]
            most = Counter(map(id, rules)).most_common(1)[0][1]  # the experts of the commonest rule
            apart = n_experts - most  # the others (trial 278 #3: counted against expert 0, the odd one out)
            if apart:
                raise BadInputError(
                    f"quantization_config stores {apart} of the {n_experts} experts of {prefix} apart from the"
                    f" others ({projection}): mha prices the experts of one layer alike; remove quantization_config"
                    " from a copy of the file to price bf16 weights"
                )
            self.memo[key] = rules[0]
        return self.memo[key]  # type: ignore[return-value]

    def _match(self, module: str, experts: bool = False) -> SchemeRule | None:
        if experts and self.experts_unquantised:
            return None
        spelled = (self.names.checkpoint(module), self.names.engine(module))
        if (self.experts_ignore or not experts) and self.ignore.match(*spelled):
            return None
        for rule, named in self.named:
            if named.match(*spelled):
                return rule
        return self.experts if experts else self.by_class


class _Patterns:
    """A list's plain names and globs, matched on the checkpoint's spelling, and its ``re:`` patterns, matched on
    vLLM's, each compiled into one matcher."""

    def __init__(self, patterns: list[str], method: str) -> None:
        self.plain = _union([p for p in patterns if not p.startswith("re:")], method)
        self.regex = _union([p for p in patterns if p.startswith("re:")], method)

    def match(self, checkpoint_name: str, engine_name: str) -> bool:
        return bool(
            (self.plain is not None and self.plain.match(checkpoint_name))
            or (self.regex is not None and self.regex.match(engine_name))
        )


TEXT_MODEL_PREFIXES = (
    ("model.language_model.", "model."),
    ("language_model.model.", "model."),
    ("language_model.lm_head", "lm_head"),
)
"""How a multimodal checkpoint spells its text decoder, and mha's spelling of it (mha names the decoder ``model``), as
vLLM maps the checkpoint's names onto its text model:

- ``model.language_model.``: transformers 5's ``Gemma4ForConditionalGeneration``, whose ``model.language_model`` is
  its ``Gemma4TextModel``, so the NVIDIA and RedHat NVFP4 checkpoints of Gemma 4 exclude
  ``model.language_model.layers.N.self_attn*`` (``Gemma4ForConditionalGeneration.hf_to_vllm_mapper``, vLLM 0.34.0
  ``models/gemma4_mm.py``);
- ``language_model.model.`` and ``language_model.lm_head``: Kimi-K2.5's ``KimiK25ForConditionalGeneration``, whose
  text model is a ``DeepseekV2ForCausalLM`` built under the prefix ``language_model`` (vLLM 0.34.0
  ``models/kimi_k25.py``), so its checkpoints and vLLM name ``language_model.model.layers.N`` and
  ``language_model.lm_head``: NVIDIA's Kimi-K2.6 NVFP4 checkpoint excludes ``language_model.model.layers.0*`` and
  ``language_model.model.layers.N.self_attn*`` (its ``hf_quant_config.json``). vLLM 0.15.1's ``kimi_k25.py`` built
  the text model as a bare ``DeepseekV2Model`` (names ``language_model.layers.N``); 0.34.0's ``hf_to_vllm_mapper``
  maps that older spelling forward, for the NVFP4 checkpoints written against it."""


def read_text_model(pattern: str, names: ModuleNames = MHA_NAMES) -> str:
    """``pattern`` with a multimodal checkpoint's text-model prefix (``TEXT_MODEL_PREFIXES``) read as mha's decoder's,
    where ``names`` spells the language model as mha does (a Qwen3.5 image-text checkpoint spells it
    ``model.language_model.`` itself: ``core.checkpoint_names``)."""
    if names.checkpoint_root != "model.":
        return pattern
    for spelled, ours in TEXT_MODEL_PREFIXES:
        if pattern.removeprefix("re:").startswith(spelled):
            return pattern.replace(spelled, ours, 1)
    return pattern


def names(pattern: str, module: str, method: str = "") -> bool:
    """Whether ``pattern`` (``re:<regex>``, a glob, or a module name) names ``module`` as ``method``'s loader
    matches it."""
    return _regex(pattern_regex(read_text_model(pattern), method)).match(module) is not None


def pattern_regex(pattern: str, method: str = "") -> str:
    """The regular expression that matches, from a name's start, the names ``pattern`` names: a ``re:`` pattern's
    own; for compressed-tensors a plain name (a ``*`` in it too) only itself; for ModelOpt a glob over the whole name
    and a plain name anywhere in it; for the rest a glob over the whole name and a name itself and every name beneath
    it. A named format's lists (``core.named_exclusions``) as its vLLM loader reads them: ``NAMED_MATCHING``."""
    if pattern.startswith("re:"):
        return pattern[3:]
    if method in NAMED_MATCHING:
        return NAMED_MATCHING[method](pattern)
    if method == "compressed-tensors":
        return re.escape(pattern) + r"\Z"
    if any(c in pattern for c in "*?["):
        return fnmatch.translate(pattern)
    if method == "modelopt":
        return ".*" + re.escape(pattern)
    return re.escape(pattern) + r"(?:\..*)?\Z"


def _whole_name(pattern: str) -> str:
    """vLLM 0.19.1 ``quant_utils.is_layer_skipped`` (``Fp8Config``, ``FBGEMMFp8Config``): a linear layer's name is in
    the list; a ``FusedMoE`` (``model.layers.N.mlp.experts``) is skipped when an entry holding ``experts`` holds its
    name, so an entry naming one expert (``model.layers.3.mlp.experts.0.gate_proj``) names its layer's experts."""
    whole = re.escape(pattern) + r"\Z"
    if "experts" not in pattern:
        return whole
    return f"{whole}|{re.escape(pattern[: pattern.index('experts') + len('experts')])}\\Z"


def _anywhere(pattern: str) -> str:
    """vLLM 0.19.1 ``is_layer_skipped(..., skip_with_substr=True)`` (AWQ, AWQ-Marlin) and ``is_layer_gptq_quantized``
    (GPTQ's ``modules_in_block_to_quantize``): the entry anywhere in the name."""
    return ".*" + re.escape(pattern)


def _component_or_prefix(pattern: str) -> str:
    """vLLM 0.19.1 ``bitsandbytes.py`` ``is_layer_skipped_bnb``: the entry is one of the name's dot-separated parts, or
    the name's first parts joined."""
    return (r"(?:.*\.)?" if "." not in pattern else "") + re.escape(pattern) + r"(?:\..*)?\Z"


NAMED_MATCHING = {"fp8": _whole_name, "awq": _anywhere, "gptq": _anywhere, "bitsandbytes": _component_or_prefix}
"""How a named format's loader compares a plain entry with a module's name, by ``WeightScheme.method``."""


def _union(patterns: list[str], method: str = "") -> "re.Pattern[str] | _AnyOf | None":
    """One matcher for several patterns: their regular expressions joined, or (when one of them carries flags that
    cannot be joined) each tried in turn; None without patterns."""
    if not patterns:
        return None
    regexes = [pattern_regex(pattern, method) for pattern in patterns]
    try:
        return re.compile("|".join(f"(?:{regex})" for regex in regexes))
    except re.error:
        return _AnyOf([_regex(regex) for regex in regexes])


class _AnyOf:
    def __init__(self, regexes: "list[re.Pattern[str]]") -> None:
        self.regexes = regexes

    def match(self, module: str) -> bool:
        return any(regex.match(module) for regex in self.regexes)


@lru_cache(maxsize=256)
def _regex(text: str) -> "re.Pattern[str]":
    try:
        return re.compile(text)
    except re.error as exc:
        raise BadInputError(f"quantization_config pattern {text!r} is not a regular expression ({exc})") from None
