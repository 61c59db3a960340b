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
3. else the first rule whose targets are a class of layer (``Linear``: every linear layer);
4. else it is not quantised (bf16).

A pattern names a module when it is ``re:<regex>`` and the regex matches from the name's start (compressed-tensors'
and Quark's ``re:`` prefix), when it holds ``*``, ``?`` or ``[`` and matches the whole name as a shell glob
(ModelOpt's and Quark's wildcards), or when it is the name itself or one of its parents (``model.layers.0.mlp.experts``
names every expert of layer 0, as ModelOpt's mixed-precision config lists fused experts).

Names are mha's own (``core.inventory``: Llama's, ``model.layers.N.self_attn.q_proj``,
``model.layers.N.mlp.down_proj``), which are the checkpoint's for Llama-like models; a routed expert is named as
checkpoints store experts one by one, ``model.layers.N.mlp.experts.E.gate_proj`` (DeepSeek, Qwen-MoE; Gemma 4's beside
its dense MLP: ``model.layers.N.experts.E.gate_proj``, ``model.layers.N.mlp.gate_proj``, as its checkpoints name
them), and a multimodal checkpoint's ``model.language_model.`` is read as ``model.`` (``TEXT_MODEL_PREFIX``). A family whose
checkpoint names differ (Mixtral's ``block_sparse_moe.experts.E.w1``, GPT-2's ``c_attn``) is matched on these names:
the entries that name none of the model's modules are reported (``unmatched``) rather than silently dropped. The
embedding and the LM head stay bf16 whatever the config says: vLLM's loaders quantise ``LinearBase`` and fused-MoE
layers, and its ``ParallelLMHead`` is neither.
"""

import fnmatch
import re
from collections.abc import Iterable
from functools import lru_cache

from pydantic import ConfigDict, Field, PrivateAttr

from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record, empty_list
from mha_cli.core.weight_formats import MatrixLayout, WeightFormatName

LINEAR = "Linear"
"""The layer class a rule targets to cover every linear layer (compressed-tensors' ``targets: ["Linear"]``)."""


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

    @property
    def layout(self) -> MatrixLayout:
        """The layout its matrices are priced in (``core.weight_formats``)."""
        return MatrixLayout(
            self.value_bits, self.scale_bytes, self.scale_rows, self.scale_cols, self.zero_bits, self.group_index,
            self.extra_bytes,
        )  # fmt: skip


class WeightScheme(Record):
    """A checkpoint's quantization config, read: which rule stores each linear layer's weight."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    method: str
    """The config's ``quant_method``: ``compressed-tensors``, ``modelopt`` or ``quark``."""
    format: WeightFormatName
    """The format of its main rule (the one on every linear layer, else the first): what names the scheme in tables,
    and what the cost model and flag suggestions read."""
    rules: list[SchemeRule]
    ignore: list[str] = Field(default_factory=empty_list)
    """Modules that stay bf16 (the config's ``ignore``, ``exclude_modules`` or ``exclude``)."""

    _matcher: "SchemeMatcher | None" = PrivateAttr(default=None)

    def matcher(self) -> "SchemeMatcher":
        """The scheme's patterns compiled, remembering what each module resolved to (built once per scheme)."""
        if self._matcher is None:
            self._matcher = SchemeMatcher(self)
        return self._matcher

    def rule_for(self, module: str) -> "SchemeRule | None":
        """The rule that stores ``module``'s weight (a name like ``model.layers.3.self_attn.q_proj``); None: bf16."""
        return self.matcher().rule_for(module)

    def unmatched(self, modules: Iterable[str]) -> list[str]:
        """The ignore entries and named targets that name none of ``modules`` (a model's module names)."""
        patterns = [*self.ignore, *(t for rule in self.rules for t in rule.targets if not is_layer_class(t))]
        left = {pattern: _regex(pattern_regex(pattern)) for pattern in patterns}
        for module in modules:
            for pattern in [p for p, regex in left.items() if regex.match(module)]:
                del left[pattern]
            if not left:
                break
        return list(left)

    def describe(self) -> str:
        """One line: each rule with what it covers, then what stays bf16."""
        rules = "; ".join(f"{', '.join(rule.targets)}: {rule.description or rule.name}" for rule in self.rules)
        kept = f"; kept in bf16: {', '.join(self.ignore)}" if self.ignore else ""
        return f"{self.method}, {rules}{kept}"


class SchemeMatcher:
    """A scheme's ignore list and each rule's named targets compiled into one regular expression each, and the rule
    every module resolved to remembered: a 61-layer, 256-expert model names some 47,000 modules, matched once."""

    def __init__(self, scheme: WeightScheme) -> None:
        self.ignore = _union(scheme.ignore)
        self.named = [
            (rule, _union([t for t in rule.targets if not is_layer_class(t)])) for rule in scheme.rules
        ]  # fmt: skip
        self.by_class = next((rule for rule in scheme.rules if LINEAR in rule.targets), None)
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
        if key not in self.memo:
            rules = [self._match(f"{prefix}.experts.{e}.{projection}") for e in range(n_experts)]
            apart = sum(rule is not rules[0] for rule in rules)
            if apart:
                raise BadInputError(
                    f"quantization_config stores {apart} of the {n_experts} experts of {prefix} apart from the"
                    f" others ({projection}): mha prices the experts of one layer alike; remove quantization_config"
                    " from a copy of the file to price bf16 weights"
                )
            self.memo[key] = rules[0]
        return self.memo[key]  # type: ignore[return-value]

    def _match(self, module: str) -> SchemeRule | None:
        if self.ignore is not None and self.ignore.match(module):
            return None
        for rule, named in self.named:
            if named is not None and named.match(module):
                return rule
        return self.by_class


def names(pattern: str, module: str) -> bool:
    """Whether ``pattern`` (``re:<regex>``, a glob, or a module name) names ``module`` or one of its parents."""
    return _regex(pattern_regex(pattern)).match(module) is not None


TEXT_MODEL_PREFIX = ("model.language_model.", "model.")
"""A multimodal checkpoint's text decoder sits under ``model.language_model`` (transformers 5's
``Gemma4ForConditionalGeneration``: ``model.language_model`` is its ``Gemma4TextModel``, so the NVIDIA and RedHat
NVFP4 checkpoints of Gemma 4 exclude ``model.language_model.layers.N.self_attn*``), where mha names the decoder
``model``: a pattern spelled from that prefix is read from mha's, as vLLM maps the checkpoint's names onto its text
model (``Gemma4ForConditionalGeneration.hf_to_vllm_mapper``, vLLM 0.34.0 ``models/gemma4_mm.py``)."""


def pattern_regex(pattern: str) -> str:
    """The regular expression that matches, from a name's start, the names ``pattern`` names: a ``re:`` pattern's
    own, a glob's over the whole name, a module name's over the name and every name beneath it; a pattern spelled
    from a multimodal checkpoint's text model (``TEXT_MODEL_PREFIX``) is read from mha's decoder."""
    spelled, ours = TEXT_MODEL_PREFIX
    if pattern.removeprefix("re:").startswith(spelled):
        pattern = pattern.replace(spelled, ours, 1)
    if pattern.startswith("re:"):
        return pattern[3:]
    if any(c in pattern for c in "*?["):
        return fnmatch.translate(pattern)
    return re.escape(pattern) + r"(?:\..*)?\Z"


def _union(patterns: list[str]) -> "re.Pattern[str] | _AnyOf | None":
    """One matcher for several patterns: their regular expressions joined, or (when one of them carries flags that
    cannot be joined) each tried in turn; None without patterns."""
    if not patterns:
        return None
    regexes = [pattern_regex(pattern) for pattern in patterns]
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
