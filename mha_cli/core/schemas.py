"""The vocabulary every command uses: model geometry, deployment, and the config file.

Shape glossary used across the project (after torchtune): ``d_model`` model width; ``n_heads``
query heads; ``n_kv_heads`` key/value heads; ``head_dim`` width of one head, which may differ from
``d_model / n_heads`` when a config sets it; ``q_per_kv`` query heads sharing one KV head (the
GQA group size).

Fields left out of a spec are resolved once, at validation: ``n_kv_heads`` from the variant,
``head_dim`` from ``d_model / n_heads``, ``variant`` from the head counts. After validation every
field holds a concrete value, and values derived from them are properties, never stored twice.
"""

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError
from typing_extensions import Self

from mha_cli.core.checkpoint_headers import HeaderWeights
from mha_cli.core.dtypes import Fp8Variant, KvDtypeName, normalise_dtype_name, with_fp8_variant
from mha_cli.core.errors import MhaError
from mha_cli.core.model_migration import nest_flat_fields
from mha_cli.core.quantities import parse_token_count
from mha_cli.core.record import empty_list
from mha_cli.core.weight_formats import WeightFormatName, normalise_weight_format
from mha_cli.core.weight_scheme import WeightScheme

Variant = Literal["MHA", "GQA", "MQA", "MLA"]
MlpType = Literal["gated", "plain"]
Activation = Literal["silu", "gelu", "gelu_tanh", "relu", "relu2", "xielu"]
"""The MLP's nonlinearity: SiLU (Swish), exact (erf) GELU, GELU's tanh approximation (``gelu_pytorch_tanh``,
``gelu_new``: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))), ReLU (OPT), squared ReLU (Persimmon, Nemotron,
JAIS 2) or xIELU with its two learned scalars (Apertus)."""
NormType = Literal["rmsnorm", "layernorm"]
NormPlacement = Literal["pre", "post", "post_residual"]
"""Where a two-norm block normalises: ``pre`` each sublayer's input (Llama), ``post`` each sublayer's output inside
the residual (OLMo 2: x + norm(attn(x)), then h + norm(mlp(h))), ``post_residual`` the residual stream after each
add (the original Transformer's post-LN, GPT-1, OPT-350m: norm(x + attn(x)), then norm(h + mlp(h)))."""
QkNormSpan = Literal["head", "projection"]
"""What a q/k norm normalises over: ``head`` each head's head_dim values (Qwen3), ``projection`` the whole q and k
projections, n_heads * head_dim and n_kv_heads * head_dim values (OLMo 2, OLMoE, MiniMax-M2)."""
SoftplusGate = Literal["head", "element"]
NopeLayers = Literal["none", "global"]
"""Layers that apply no RoPE: ``none``, or the ``global`` ones of a model whose other layers attend locally
(EXAONE 4 with a sliding window: RoPE on its sliding layers only), or of a model whose other layers are linear
(Kimi-Linear: no RoPE on its MLA layers)."""
LayerKind = Literal["global", "local", "chunked", "linear"]
"""How a layer's mixer remembers the context: ``global`` attention caches every token, ``local`` the last
``sliding_window`` tokens, ``chunked`` the tokens of its current ``attention_chunk`` (Llama-4), ``linear`` no
per-token K/V at all but the fixed per-sequence state of ``ModelSpec.recurrent`` (Gated DeltaNet, Mamba)."""
MlpKind = Literal["dense", "moe", "none"]
"""A layer's feed-forward: ``dense`` (``d_ff`` wide), ``moe`` (``ModelSpec.block.moe``) or ``none``, a layer that only
mixes tokens (Nemotron-H's Mamba-2 block followed by another mixer block): one norm, no MLP."""
RecurrentKind = Literal["gated_deltanet", "mamba", "mamba2", "lightning", "kda", "short_conv", "mlstm", "rwkv"]
StateDtype = Literal["auto", "fp32", "activation"]
StateConvention = Literal["engine", "transformers"]
"""Whose allocation a fixed state and an indexer key are priced by: ``engine`` (vLLM's cache: conv_kernel - 1 conv
columns, a recurrent state of unnamed dtype in the model's, KDA's in fp32, DeepSeek-V3.2's indexer key in fp8 with a
4-byte scale per 128 values) or ``transformers`` (its cache classes: conv_kernel columns, the recurrent state in
fp32, the indexer key in the KV dtype)."""
MlaCacheMode = Literal["absorbed", "naive"]
MoeA2aBackend = Literal["none", "deepep"]
"""How DP attention's tokens reach the routed experts (``core.dp_attention``), named after SGLang's
``--moe-a2a-backend``: ``none`` gathers every data-parallel rank's tokens to all ranks and reduce-scatters the
experts' sums (SGLang's default; vLLM's default ``--all2all-backend allgather_reducescatter``), ``deepep`` sends each
token only to the devices holding its experts and back (DeepEP's all-to-all)."""
EngineName = Literal["vllm", "sglang", "trtllm"]
"""Serving engines whose memory rules ``core.engine`` models."""
GenerationId = Literal["vllm-v0", "vllm-v1", "vllm-0.21", "sglang-0.4", "sglang-0.5", "trtllm-cpp", "trtllm-pytorch"]
"""Engine generations whose memory rules differ (``core.engine.generations``)."""
EngineVersion = Annotated[str, Field(pattern=r"^\d+\.\d+(\.\d+)?(\.post\d+|\.\d+|rc\d+)?$")]
"""A release as PyPI names it: ``0.10``, ``0.10.2``, ``0.4.6.post1``, ``0.10.1.1``, ``1.0.0rc4``."""
VllmSampler = Literal["torch-sort", "flashinfer", "triton"]
"""The top-k/top-p samplers a user or a row can name for vLLM's profiling run (``core.engine.sampler``)."""
ScoringFunc = Literal["softmax", "sigmoid"]
TopkMethod = Literal["greedy", "group_limited_greedy", "noaux_tc", "noaux_logits"]
RopeScalingType = Literal["linear", "llama3", "yarn", "dynamic"]
BIASED_CHOICE = ("noaux_tc", "noaux_logits")
"""Routing methods whose choice adds the learned ``e_score_correction_bias`` (a buffer saved with the router)."""

_MAX_WIDTH = 1 << 20
_MAX_LAYERS = 10_000
_MAX_HEADS = 1 << 14
_MAX_HEAD_DIM = 1 << 14
MAX_VOCAB = 10**8
MAX_TOKENS = 1 << 34

Width = Annotated[int, Field(gt=0, le=_MAX_WIDTH)]
_Factor = Annotated[float, Field(gt=0, le=1e6)]


def upper_variant(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


def _tokens(value: object) -> object:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        try:
            return parse_token_count(value)
        except MhaError as exc:  # pydantic reports ValueErrors per field
            raise ValueError(exc.message) from None
    return value


def _names(normalise: Callable[[str], str]) -> Callable[[object], object]:
    """A before-validator that maps a name through ``normalise`` (aliases to canonical names), its refusal one line."""

    def validate(value: object) -> object:
        if isinstance(value, str):
            try:
                return normalise(value)
            except MhaError as exc:
                raise ValueError(exc.message) from None
        return value

    return validate


TokenCount = Annotated[
    int,
    BeforeValidator(_tokens),
    Field(gt=0, le=MAX_TOKENS),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "exclusiveMinimum": 0, "maximum": MAX_TOKENS},
                {"type": "string", "pattern": r"^\s*[0-9]*\.?[0-9]+\s*[kKmMgG]?\s*$"},
            ],
            "description": "tokens: an integer, or with a binary suffix (8k = 8192, 128K = 131072)",
        }
    ),
]


_weight_format = _names(normalise_weight_format)
_kv_dtype = _names(lambda name: normalise_dtype_name(name, kv=True))


KvDtype = Annotated[KvDtypeName, BeforeValidator(_kv_dtype)]
WeightDtype = Annotated[WeightFormatName, BeforeValidator(_weight_format)]


class _Strict(BaseModel):
    # strict: a boolean or a string ("64") is not a count; fields that parse text (seq_len "8k") do so first
    model_config = ConfigDict(extra="forbid", defer_build=True, strict=True, allow_inf_nan=False)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update``'s fields replaced (not validated, as pydantic's); a key that is no field of this
        model is refused, where pydantic would set an attribute nothing reads."""
        unknown = sorted(set(update or ()) - set(type(self).model_fields))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(unknown)}")
        return super().model_copy(update=update, deep=deep)


class MLAIndexerSpec(_Strict):
    """DeepSeek-V3.2's lightning indexer: it caches one extra key per token per layer beside the MLA latent."""

    index_head_dim: Width
    """Width of the indexer's cached key (DeepSeek-V3.2: 128)."""
    index_n_heads: Annotated[Width | None, Field(exclude_if=lambda value: value is None)] = None
    """The indexer's query heads (DeepSeek-V3.2: 64); given, its weights are counted and built (wq_b from the q
    latent, wk, its key LayerNorm, weights_proj); None: a spec that prices the cache only, its weights uncounted."""
    index_topk: Annotated[Width | None, Field(exclude_if=lambda value: value is None)] = None
    """Keys each query attends to, the indexer's top k (DeepSeek-V3.2: 2048); up to it, attention is dense."""


class MLASpec(_Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): K and V are compressed to one shared latent."""

    kv_lora_rank: Width
    """Width of the compressed KV latent (values per token per layer); DeepSeek-V3: 512."""
    qk_rope_head_dim: Annotated[int, Field(ge=0, le=_MAX_WIDTH)] = 64
    """Width of the decoupled RoPE key, shared by all heads and cached beside the latent; 0 = none."""
    qk_nope_head_dim: Width = 128
    """Per-head query/key width without RoPE, decompressed from the latent."""
    v_head_dim: Width = 128
    """Per-head value width, decompressed from the latent."""
    q_lora_rank: Width | None = None
    """Width of the compressed query latent; ``None`` projects queries directly from d_model."""
    rope_interleave: bool = True
    """RoPE pairs of the rope part: interleaved (x0, x1), (x2, x3)... as DeepSeek (config.json's
    ``rope_interleave``, the transformers default), or rotate-half (x_i, x_(i + p/2)) when false."""
    indexer: MLAIndexerSpec | None = None
    """DeepSeek-V3.2's lightning indexer (sparse attention), whose per-token key is cached beside the latent."""

    @property
    def qk_head_dim(self) -> int:
        """Query/key width per head: nope + rope."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def latent_dim(self) -> int:
        """Values cached per token per layer in the absorbed form: latent + RoPE key."""
        return self.kv_lora_rank + self.qk_rope_head_dim


class RopeScaling(_Strict):
    """Context extension of RoPE's frequencies (config.json's ``rope_scaling``); fields by ``type``.

    linear: every frequency divided by ``factor``. llama3 (Llama 3.1): low frequencies divided by
    ``factor``, high ones kept, a smooth ramp between (``low_freq_factor``, ``high_freq_factor``).
    yarn: a ramp between interpolated and original frequencies (``beta_fast``, ``beta_slow``) and an
    ``attention_factor`` scaling cos and sin (inferred from ``factor``, ``mscale``, ``mscale_all_dim``).
    dynamic (NTK-aware, InternLM2): the base rescaled only past the trained context, as transformers'
    ``dynamic_rope_update`` runs it, so within it the frequencies are unscaled; ``factor`` extends the context the
    engines derive (``core.engine.context_limit``).
    """

    type: RopeScalingType
    factor: Annotated[float, Field(gt=0)]
    """How many times longer than ``original_max_position_embeddings`` the context is."""
    original_max_position_embeddings: Annotated[int, Field(gt=0, le=MAX_TOKENS)] | None = None
    """Context of the pre-training (llama3 and yarn need it)."""
    low_freq_factor: Annotated[float, Field(gt=0)] = 1.0
    """llama3: wavelengths above original / low_freq_factor are divided by factor."""
    high_freq_factor: Annotated[float, Field(gt=0)] = 4.0
    """llama3: wavelengths below original / high_freq_factor are kept."""
    beta_fast: Annotated[float, Field(gt=0)] = 32.0
    """yarn: rotations above which a dimension keeps its original frequency."""
    beta_slow: Annotated[float, Field(gt=0)] = 1.0
    """yarn: rotations below which a dimension is fully interpolated."""
    mscale: float | None = None
    """yarn: numerator coefficient of the inferred attention factor (DeepSeek)."""
    mscale_all_dim: float | None = None
    """yarn: denominator coefficient of the inferred attention factor (DeepSeek)."""
    attention_factor: Annotated[float, Field(gt=0)] | None = None
    """yarn: scale of cos and sin; default 0.1 ln(factor) + 1 (or the mscale ratio)."""
    truncate: bool = True
    """yarn: round the ramp's ends to whole dimensions (gpt-oss: false)."""

    @model_validator(mode="after")
    def _needs_original_context(self) -> "RopeScaling":
        if self.type in ("llama3", "yarn") and self.original_max_position_embeddings is None:
            raise ValueError(f"rope scaling {self.type} needs original_max_position_embeddings")
        if self.type == "llama3" and self.high_freq_factor < self.low_freq_factor:
            raise ValueError(
                "llama3 rope scaling needs high_freq_factor >= low_freq_factor (equal: no smooth band, Llama 4)"
            )
        return self


def _is_false(value: object) -> bool:
    return value is False


class RopeSpec(_Strict):
    """Rotary position embedding: frequencies theta^(-2i / rotated width), optionally scaled."""

    theta: Annotated[float, Field(gt=1)] = 10000.0
    """Base wavelength (config.json's rope_theta); Llama 3: 500,000."""
    partial_rotary_factor: Annotated[float, Field(gt=0, le=1)] = 1.0
    """Fraction of head_dim that rotates (the first dimensions); the rest pass through."""
    scaling: RopeScaling | None = None
    interleaved: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Pairs that rotate together: interleaved (x0, x1), (x2, x3)... (ERNIE 4.5, Helium), or rotate-half
    (x_i, x_(i + r/2)), Llama's (false). No effect on any size."""


def _list_as_tuple(value: object) -> object:
    """A pair read from JSON or YAML arrives as a list: the tuple it stands for (strict validation wants one)."""
    return tuple(value) if isinstance(value, list) else value


_Pair = Annotated[tuple[_Factor, _Factor], BeforeValidator(_list_as_tuple)]
"""(alpha, beta), as written or as read back from a file."""


class NormedResidual(_Strict):
    """MiniMax's block: each sublayer's residual is its normed input, not the block's, and both terms are scaled:
    h = norm(x); x' = alpha * h + beta * sublayer(h), for the attention (or linear-attention) and the MLP sublayer
    alike (transformers' ``*_alpha_factor`` / ``*_beta_factor``, the remote code's ``layernorm_*_alpha`` / ``_beta``
    with ``postnorm``). Pairs are (alpha, beta). No weight, no size."""

    attention: _Pair = (1.0, 1.0)
    """After a softmax-attention sublayer (``full_attn_alpha_factor``, ``full_attn_beta_factor``)."""
    linear: _Pair = (1.0, 1.0)
    """After a fixed-state (lightning) sublayer (``linear_attn_alpha_factor``, ``linear_attn_beta_factor``)."""
    mlp: _Pair = (1.0, 1.0)
    """After the MLP / MoE (``mlp_alpha_factor``, ``mlp_beta_factor``)."""


DEFAULT_NORM_EPS = 1e-5
"""Epsilon of RMSNorm / LayerNorm when a spec does not state one (Llama 2/3, Mistral, GPT-2)."""


def _is_none(value: object) -> bool:
    return value is None


def _is_zero(value: object) -> bool:
    return value == 0


def _is_default_eps(value: object) -> bool:
    return value == DEFAULT_NORM_EPS


def _is_default(default: object) -> Callable[[object], bool]:
    """An ``exclude_if`` for a field left at its default: a spec written out omits it, as before the field existed."""
    return lambda value: value == default and type(value) is type(default)


class RecurrentSpec(_Strict):
    """A mixer that keeps a fixed state per sequence instead of per-token K/V (linear attention, state space).

    The state one layer holds for one sequence, in values: ``n_heads * head_dim * state_dim`` (the recurrent
    state) plus ``conv_dim * conv_kernel`` (the short causal convolution's last inputs), whatever the context.
    Gated DeltaNet (Qwen3-Next): value heads x key dim x value dim, conv over q, k, v. Mamba (Jamba): d_inner
    channels x 1 x d_state. Mamba-2 (Falcon-H1, Granite-4.0-H): heads x head dim x d_state, conv over x, B, C.
    Lightning attention (MiniMax): heads x head_dim x head_dim, no conv. KDA (Kimi-Linear): like Gated DeltaNet.
    Short convolution (LFM2): no recurrent state (``state_dim`` 0), a conv over d_model channels. mLSTM (xLSTM):
    heads x qk head dim x v head dim (its matrix memory C), plus per head its normaliser n (qk head dim values) and
    stabiliser m (one value), no conv. RWKV-4 (transformers' ``rwkv``): per channel its numerator, denominator and
    maximum (``state_dim`` 3, d_model channels x 1), and the last input of its time mix and channel mix (a token
    shift: ``conv_dim`` 2 x d_model, ``conv_kernel`` 2, this input and the last).
    """

    kind: RecurrentKind
    n_heads: Annotated[int, Field(gt=0, le=_MAX_WIDTH)]
    """State heads (Mamba-1: d_inner channels, each with its own state vector)."""
    head_dim: Annotated[int, Field(gt=0, le=_MAX_WIDTH)]
    """Rows of one head's state (Gated DeltaNet/KDA: key head dim; Mamba-2: head dim; Mamba-1: 1)."""
    state_dim: Annotated[int, Field(ge=0, le=_MAX_WIDTH)]
    """Columns of one head's state (Gated DeltaNet/KDA: value head dim; Mamba: d_state); 0 for a short convolution
    (LFM2's ``short_conv``), whose only state is its conv's."""
    conv_dim: Annotated[int, Field(ge=0, le=_MAX_WIDTH)] = 0
    """Channels of the short causal convolution whose last inputs are kept (0: no convolution)."""
    conv_kernel: Annotated[int, Field(ge=0, le=64)] = 0
    """Inputs kept per conv channel: the kernel width, as transformers caches it (vLLM keeps one fewer)."""
    state_dtype: StateDtype = "auto"
    """Format of the recurrent state: ``fp32`` or the ``activation`` dtype when the config names one (Qwen3.5's
    ``mamba_ssm_dtype``, MiniMax's lightning attention), else ``auto``: the convention's (``StateConvention``:
    transformers fp32; vLLM the model's dtype, fp32 for KDA). The conv state is always in the activation dtype."""
    on_attention_layers: bool = False
    """True when every layer runs this mixer beside its attention (Falcon-H1's parallel hybrid), so attention
    layers hold the state too; False when only ``linear`` layers hold it."""
    n_groups: Annotated[int, Field(gt=0, le=_MAX_WIDTH)] = 1
    """Mamba-2: groups of heads sharing one B and one C, so d_inner = ``conv_dim - 2 * n_groups * state_dim``."""
    dt_rank: Annotated[int, Field(gt=0, le=_MAX_WIDTH)] | None = None
    """Mamba-1: width of the low-rank step projection (x_proj to dt_proj); None: ceil(d_model / 16)."""
    conv_bias: bool | None = None
    """Whether the short convolution has one bias per channel; None: the kind's own (Mamba and Mamba-2 yes, the
    others no)."""
    in_proj_bias: bool = False
    """Whether the mixer's input projection has biases (Jamba's and Granite's ``mamba_proj_bias``)."""
    out_proj_bias: bool = False
    """Whether the mixer's output projection has biases (Falcon-H1's ``projectors_bias``)."""
    split_projections: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Gated DeltaNet: q, k, v then z, b and a come from four projections (Qwen3.5's in_proj_qkv, in_proj_z,
    in_proj_b, in_proj_a, each head after head), not Qwen3-Next's two laid out key head by key head; the same
    weights and state either way."""
    output_norm: bool = True
    """Whether the mixer carries its norm weights: the gated RMSNorm of Mamba-2, Gated DeltaNet, KDA and lightning
    attention (Falcon-H1's ``mamba_rms_norm`` is false by default), Jamba's dt, B and C norms for Mamba-1."""
    norm_before_gate: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Mamba-2: its gated norm normalises, then gates by silu(z) (Falcon-H1's ``mamba_norm_before_gate``); false:
    gates, then normalises (Mamba-2's, Granite-4.0-H's). No effect on any size."""
    weightless_norms: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Mamba-1 with ``output_norm``: its dt, B and C norms carry no weights (Falcon-Mamba), so none is counted."""
    norm_eps: Annotated[Annotated[float, Field(gt=0)] | None, Field(exclude_if=_is_none)] = None
    """The epsilon of the mixer's own norms where it is not the model's (Falcon-Mamba's ``mixer_rms_eps``)."""

    @model_validator(mode="after")
    def _split_projections_are_gated_deltanets(self) -> "RecurrentSpec":
        if self.split_projections and self.kind != "gated_deltanet":
            raise ValueError(f"split_projections lays out a gated_deltanet mixer's projections, not {self.kind}'s")
        if (self.state_dim == 0) != (self.kind == "short_conv"):
            raise ValueError("state_dim is 0 for a short_conv mixer (its conv is its only state), and only for it")
        if self.kind == "short_conv" and not self.conv_dim * self.conv_kernel:
            raise ValueError("a short_conv mixer needs conv_dim and conv_kernel")
        if self.norm_before_gate and self.kind != "mamba2":
            raise ValueError(f"norm_before_gate orders a mamba2 mixer's gated norm, not {self.kind}'s")
        if self.weightless_norms and not (self.kind == "mamba" and self.output_norm):
            raise ValueError("weightless_norms are a mamba mixer's dt, B and C norms: set output_norm too")
        return self

    @property
    def values_per_head(self) -> int:
        """Values of one head's recurrent state: head_dim x state_dim (mLSTM: + its n and m, head_dim + 1)."""
        extra = self.head_dim + 1 if self.kind == "mlstm" else 0
        return self.head_dim * self.state_dim + extra

    @property
    def recurrent_values(self) -> int:
        """Values of the recurrent state, one layer, one sequence."""
        return self.n_heads * self.values_per_head

    @property
    def conv_values(self) -> int:
        """Values of the conv state, one layer, one sequence."""
        return self.conv_dim * self.conv_kernel

    @property
    def has_conv_bias(self) -> bool:
        """``conv_bias``, or the kind's default when unset: Mamba and Mamba-2 convolve with a bias."""
        return self.conv_bias if self.conv_bias is not None else self.kind in ("mamba", "mamba2")


class Multipliers(_Strict):
    """Fixed factors a family's modeling code puts on its activations (Falcon-H1's muP multipliers, Granite's
    embedding and residual multipliers): no weight, no cache, only the decoder's arithmetic. Each 1: no factor."""

    embedding: _Factor = 1.0
    """On the token embeddings."""
    attention_in: _Factor = 1.0
    """On the normed input of the attention (not of the mixer beside it)."""
    attention_out: _Factor = 1.0
    """On the attention's output."""
    key: _Factor = 1.0
    """On the keys, after k_proj (so the cache holds them scaled)."""
    ssm_in: _Factor = 1.0
    """On the normed input of the Mamba-2 mixer."""
    ssm_out: _Factor = 1.0
    """On the Mamba-2 mixer's output."""
    ssm_projection: Annotated[list[_Factor], Field(min_length=5, max_length=5)] = [1.0, 1.0, 1.0, 1.0, 1.0]
    """On the five parts of the Mamba-2 in_proj's output: z, x, B, C, dt (Falcon-H1's ``ssm_multipliers``)."""
    mlp_gate: _Factor = 1.0
    """On the MLP's gate projection, before the activation."""
    mlp_down: _Factor = 1.0
    """On the MLP's output."""
    residual: _Factor = 1.0
    """On each sublayer's output (attention or mixer, MLP) where it joins the residual (Granite's
    ``residual_multiplier``)."""


class MoESpec(_Strict):
    """Mixture-of-experts MLP: counts for parameters and weight memory, not for the KV cache."""

    n_experts: Annotated[int, Field(gt=0, le=1 << 16)]
    """Routed experts per MoE layer."""
    n_active_experts: Annotated[int, Field(gt=0, le=1 << 16)]
    """Routed experts each token uses (top-k)."""
    n_shared_experts: Annotated[int, Field(ge=0, le=1 << 10)] = 0
    """Experts every token uses in addition to the routed ones."""
    d_ff_expert: Width
    """Hidden width of one routed expert's MLP."""
    d_ff_shared: Width | None = None
    """Hidden width of each shared expert when it differs from d_ff_expert (Qwen2-MoE: 5632)."""
    n_dense_layers: Annotated[int, Field(ge=0, le=_MAX_LAYERS)] = 0
    """Leading layers that keep a dense MLP of width ``d_ff`` (DeepSeek's first_k_dense_replace)."""
    layer_period: Annotated[int, Field(gt=0, le=_MAX_LAYERS)] = 1
    """Past the leading dense layers, every ``layer_period``-th layer is MoE, the others dense (Jamba's
    expert_layer_period 2, Qwen-MoE's decoder_sparse_step); 1: every layer."""
    layer_offset: Annotated[int, Field(ge=0, le=_MAX_LAYERS)] = 0
    """The first MoE layer of the period (Jamba's expert_layer_offset 1): layer i is MoE when
    (i - layer_offset) % layer_period == 0."""

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) has this MoE MLP rather than a dense one."""
        return layer >= self.n_dense_layers and (layer - self.layer_offset) % self.layer_period == 0

    expert_bias: bool = False
    """Whether expert projections carry biases (gpt-oss)."""
    shared_expert_gate: bool = False
    """Whether a sigmoid gate (d_model -> 1) scales the shared expert's output (Qwen2-MoE)."""
    output_norm: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Whether an RMSNorm (d_model weights) normalises the MoE block's output (A.X K1's post_mlp_layernorm)."""
    sparsemixer_eps: Annotated[Annotated[float, Field(gt=0, le=1)] | None, Field(exclude_if=_is_none)] = None
    """PhiMoE's sparsemixer routing, with its jitter epsilon (router_jitter_noise): experts chosen one at a time,
    each weighted by a softmax over the logits near it (``nn.sparsemixer``); None: the routing fields' own."""
    branch_norms: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Gemma 4's MoE block: the shared expert (its dense MLP) and the routed experts each on their own normed branch,
    ``post_feedforward_layernorm_1`` on the MLP's output, ``pre_feedforward_layernorm_2`` and ``_2`` on the experts'
    input and output (3 RMSNorms of d_model weights; transformers 5.24 ``Gemma4TextDecoderLayer``)."""
    router_scales: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Gemma 4's router: a learned scale on its normed input (d_model weights) and one per expert on the chosen
    weights (n_experts weights; transformers 5.24 ``Gemma4TextRouter.scale`` and ``per_expert_scale``)."""
    router_bias: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Whether the router adds a learned bias per expert to its logits (gpt-oss: n_experts weights a layer)."""
    swiglu_limit: Annotated[Annotated[float, Field(gt=0)] | None, Field(exclude_if=_is_none)] = None
    """gpt-oss's clamped SwiGLU in the routed experts: gate clamped to at most the limit, up to [-limit, limit],
    out (up + 1) * gate * sigmoid(``swiglu_alpha`` * gate); None: SiLU(gate) * up."""
    swiglu_alpha: Annotated[float, Field(gt=0, exclude_if=_is_default(1.702))] = 1.702
    """The sigmoid's factor of the clamped SwiGLU (gpt-oss's swiglu_alpha); read only with ``swiglu_limit``."""

    # Routing: which experts a token uses and with what weights (no effect on sizes or counts).
    scoring_func: ScoringFunc = "softmax"
    """Router scores: softmax over all experts (Mixtral, Qwen-MoE, DeepSeek-V2) or sigmoid per expert (DeepSeek-V3)."""
    topk_method: TopkMethod = "greedy"
    """greedy: the top-k scores; group_limited_greedy: top-k within the ``topk_group`` groups of highest max
    score (DeepSeek-V2); noaux_tc: groups ranked by their two best biased scores, experts chosen by
    score + e_score_correction_bias, weighted by the unbiased score (DeepSeek-V3); noaux_logits: experts chosen by
    logit + e_score_correction_bias, before the scoring function, weighted by their scores (Kolibri)."""
    norm_topk_prob: bool = True
    """Whether the k chosen weights are renormalised to sum to 1 (Mixtral, Qwen3-MoE, DeepSeek-V3)."""
    routed_scaling_factor: Annotated[float, Field(gt=0, le=1e4)] = 1.0
    """Factor on the routed experts' weights after normalisation (DeepSeek-V3: 2.5)."""
    n_group: Annotated[int, Field(gt=0, le=1 << 16)] = 1
    """Expert groups for group-limited routing (DeepSeek-V3: 8); 1 = no groups."""
    topk_group: Annotated[int, Field(gt=0, le=1 << 16)] = 1
    """Groups a token may route to (DeepSeek-V3: 4)."""

    @model_validator(mode="after")
    def _active_within_total(self) -> "MoESpec":
        if self.n_active_experts > self.n_experts:
            raise ValueError(f"n_active_experts ({self.n_active_experts}) must not exceed n_experts ({self.n_experts})")
        if self.n_experts % self.n_group:
            raise ValueError(f"n_experts ({self.n_experts}) must be divisible by n_group ({self.n_group})")
        if self.topk_group > self.n_group:
            raise ValueError(f"topk_group ({self.topk_group}) must not exceed n_group ({self.n_group})")
        if self.topk_method != "greedy" and self.topk_group * self.n_experts // self.n_group < self.n_active_experts:
            raise ValueError(
                f"topk_group ({self.topk_group}) groups of {self.n_experts // self.n_group} experts cannot hold"
                f" n_active_experts ({self.n_active_experts}): raise topk_group"
            )
        return self


VisionTowerKind = Literal["siglip", "qwen2_5_vl", "qwen3_vl", "llama4", "pixtral", "gemma4", "moonvit"]
"""The vision encoders whose weights are listed (``core.vision_tower``): ``siglip`` (Gemma 3's SigLIP ViT and its
projector), ``qwen2_5_vl`` (Qwen2.5-VL's windowed ViT and patch merger), ``qwen3_vl`` (Qwen3-VL's ViT with learned
positions, its merger and the DeepStack mergers; Qwen3.5's and Qwen3.6's, without DeepStack), ``llama4`` (Llama 4's
tiled ViT, pixel-shuffle adapter and projector), ``pixtral`` (Mistral 3's Pixtral ViT, patch merger and projector),
``gemma4`` (Gemma 4's ViT and its projector), ``moonvit`` (Kimi-K2.5's MoonViT and its patch-merger projector)."""


class VisionTowerSpec(_Strict):
    """A multimodal model's vision encoder and projector: their weights and the largest image vLLM profiles.

    ``core.vision_tower`` lists the tensors; ``core.engine.encoder_profile`` prices vLLM's encoder profiling run."""

    kind: VisionTowerKind
    d_model: Width
    """The encoder's width (vision_config's hidden_size)."""
    n_layers: Annotated[int, Field(gt=0, le=_MAX_LAYERS)]
    n_heads: Annotated[int, Field(gt=0, le=_MAX_HEADS)]
    d_ff: Width
    """The encoder MLP's hidden width (intermediate_size)."""
    head_dim: Annotated[int, Field(gt=0, le=_MAX_HEAD_DIM)] | None = None
    """Gemma 4: the width of one head (vision_config's head_dim); None: d_model / n_heads."""
    n_kv_heads: Annotated[int, Field(gt=0, le=_MAX_HEADS)] | None = None
    """Gemma 4: key/value heads (vision_config's num_key_value_heads); None: n_heads."""
    audio_tower: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Gemma 4 E2B / E4B: the model also has an audio tower (audio_config), not listed, which vLLM loads unless
    audio is limited to 0 (``--text-only`` limits it too)."""
    patch_size: Annotated[int, Field(gt=0, le=4096)]
    """Pixels per side of one patch."""
    in_channels: Annotated[int, Field(gt=0, le=16)] = 3
    image_size: Annotated[int, Field(gt=0, le=1 << 16)] | None = None
    """SigLIP: pixels per side of the (square) input image, which sets its learned positions; Pixtral: the largest
    image's side."""
    temporal_patch_size: Annotated[int, Field(gt=0, le=64)] = 1
    """Qwen2.5-VL, Qwen3-VL: frames one patch spans (2: a still image is its frame twice)."""
    spatial_merge_size: Annotated[int, Field(gt=0, le=64)] = 1
    """Qwen2.5-VL, Qwen3-VL, Pixtral (Mistral 3), MoonViT (merge_kernel_size): patches merged per side into one
    decoder token (2: 4 patches a token)."""
    positions: Annotated[int, Field(ge=0, le=1 << 24)] = 0
    """Qwen3-VL, Llama 4, Gemma 4, MoonViT: learned position embeddings (num_position_embeddings; Llama 4's patches of
    a tile and its class token; Gemma 4's position_embedding_size, one table per axis; MoonViT's pos_emb_height x
    pos_emb_width grid, square); 0: none of that kind."""
    deepstack_mergers: Annotated[int, Field(ge=0, le=256)] = 0
    """Qwen3-VL: mergers feeding encoder layers' outputs into the decoder (len(deepstack_visual_indexes)); Qwen3.5: 0."""
    adapter_width: Annotated[int, Field(ge=0, le=_MAX_WIDTH)] = 0
    """Llama 4: the pixel-shuffle adapter's hidden width (projector_input_dim); its output is ``adapter_output``."""
    adapter_output: Annotated[int, Field(ge=0, le=_MAX_WIDTH)] = 0
    """Llama 4: the adapter's output width (projector_output_dim), the projector's input."""
    video_tokens: Annotated[int, Field(gt=0, le=MAX_TOKENS)] | None = None
    """Qwen3-VL: decoder tokens of the largest video vLLM profiles (two frames of its video processor's largest
    size); None: the family's own rule (``core.engine.encoder_profile``)."""
    projector_width: Width
    """Width of the projector's output: the decoder's hidden_size (Qwen2.5-VL's out_hidden_size)."""
    tokens_per_image: Annotated[int, Field(gt=0, le=MAX_TOKENS)]
    """Decoder tokens of the largest image (Gemma 3: mm_tokens_per_image; Qwen2.5-VL: the processor's max_pixels
    / (patch x merge)^2; Gemma 4: vision_config's default_output_length)."""
    patches_per_image: Annotated[int, Field(gt=0, le=MAX_TOKENS)]
    """Encoder tokens (patches) of that image."""


MODEL_WIDTH_KEY = "__model_width__"
"""The key under which a ``ModelSpec`` hands its d_model to its attention part, whose left-out head_dim derives
from it (never part of a file)."""


class AttentionSpec(_Strict):
    """One attention layer: its heads, its projections' extras and the arithmetic of its scores.

    In a ``ModelSpec`` the head fields left out are derived once, from the model's width (``resolve_attention``):
    ``head_dim`` d_model / n_heads, ``n_kv_heads`` from the variant, ``variant`` from the head counts and ``mla``."""

    n_heads: Annotated[int, Field(gt=0, le=_MAX_HEADS)]
    """Query heads per layer."""
    n_kv_heads: Annotated[int, Field(gt=0, le=_MAX_HEADS)]
    """Key/value heads per layer; in a ``ModelSpec`` left out: n_heads (MHA), 1 for MQA, n_heads for MLA."""
    head_dim: Annotated[int, Field(gt=0, le=_MAX_HEAD_DIM)]
    """Width of one head; in a ``ModelSpec`` left out: d_model / n_heads (MLA: qk_nope + qk_rope). An explicit value
    wins (Gemma, Qwen3)."""
    variant: Annotated[Variant, BeforeValidator(upper_variant)]
    """MHA, GQA, MQA or MLA; in a ``ModelSpec`` left out: inferred from the head counts (and ``mla``)."""
    global_n_kv_heads: Annotated[Annotated[int, Field(gt=0, le=_MAX_HEADS)] | None, Field(exclude_if=_is_none)] = None
    """KV heads of the ``global`` layers where they differ from ``n_kv_heads`` (Gemma 4's
    num_global_key_value_heads under attention_k_eq_v); None: ``n_kv_heads`` on every layer."""
    global_head_dim: Annotated[Annotated[int, Field(gt=0, le=_MAX_HEAD_DIM)] | None, Field(exclude_if=_is_none)] = None
    """Head width of the ``global`` layers' queries, keys and values where it differs from ``head_dim`` (Gemma 4's
    global_head_dim); None: ``head_dim`` on every layer."""
    global_k_eq_v: Annotated[bool, Field(exclude_if=_is_false)] = False
    """The ``global`` layers have no v_proj: their values are the key projection (Gemma 4's attention_k_eq_v); K and
    V are still both cached, so it changes weights, not the cache."""
    mla: MLASpec | None = None
    """Multi-head latent attention's compressed K/V (DeepSeek-V2/V3); None: K and V projected per KV head."""
    qkv_bias: bool = False
    """Whether q_proj, k_proj and v_proj have biases (Qwen2)."""
    o_bias: bool = False
    """Whether o_proj has a bias."""
    last_o_bias: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Whether the last layer's attention output projection has a bias, d_model values, when ``o_bias`` gives the
    others none (GPT-NeoX-Japanese's ``dense_bias``)."""
    qk_norm: bool = False
    """RMSNorms on queries and keys (Qwen3, Gemma 3), after the projections, before RoPE (see ``qk_norm_span``)."""
    qk_norm_span: Annotated[QkNormSpan, Field(exclude_if=_is_default("head"))] = "head"
    """What ``qk_norm`` normalises over: ``head``, each head (2 * head_dim weights a layer); ``projection``, the whole
    q and k projections (OLMo 2, OLMoE: (n_heads + n_kv_heads) * head_dim weights a layer)."""
    qk_norm_type: Annotated[NormType, Field(exclude_if=_is_default("rmsnorm"))] = "rmsnorm"
    """The kind of the per-head ``qk_norm``: an RMSNorm (Qwen3), or a LayerNorm with weight and bias (Persimmon)."""
    output_gate: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Whether q_proj also emits a gate per query value, whose sigmoid multiplies the attention output before o_proj
    (Qwen3-Next, Qwen3.5: q_proj twice as wide, each head's query then its gate); d_model x n_heads x head_dim more
    weights a layer, nothing more cached."""
    softplus_gate: Annotated[SoftplusGate | None, Field(exclude_if=_is_none)] = None
    """Laguna's attention output gate: softplus(g_proj(x)) multiplies the attention's output before o_proj, one
    factor per ``head`` (d_model x n_heads weights a layer) or per ``element`` (d_model x n_heads x head_dim)."""
    sinks: Annotated[bool, Field(exclude_if=_is_false)] = False
    """A learned logit per query head joins every attention softmax, its weight then dropped (gpt-oss's,
    Granite-SWA's and Flint's ``self_attn.sinks``: n_heads weights a layer); not with MLA."""
    qkv_clip: Annotated[Annotated[float, Field(gt=0)] | None, Field(exclude_if=_is_none)] = None
    """Queries, keys and values clamped to [-qkv_clip, qkv_clip] after the projections and q/k norms (OLMoE's
    ``clip_qkv``); None: no clamp."""
    scale: Annotated[_Factor | None, Field(exclude_if=_is_none)] = None
    """Factor on the query-key products before the softmax; None: head_dim^-0.5. Gemma 2/3:
    query_pre_attn_scalar^-0.5 (256: 0.0625); GPT-Neo: 1 (unscaled). Not MLA's, which keeps its own."""
    logit_softcap: Annotated[_Factor | None, Field(exclude_if=_is_none)] = None
    """Attention scores soft-capped to (-cap, cap) as cap * tanh(score / cap) after the scale, before the mask
    and softmax (Gemma 2's attn_logit_softcapping: 50); None: uncapped. The capped scores are computed explicitly
    (SDPA cannot cap), in query chunks of bounded size."""
    masked_window: Annotated[Annotated[int, Field(gt=0, le=MAX_TOKENS)] | None, Field(exclude_if=_is_none)] = None
    """A window the ``global`` layers' attention mask applies while their cache keeps every token (transformers'
    MiniMax with a ``sliding_window``: its full-attention layers are masked to it, its cache is not windowed);
    None: global layers see every cached token. Changes no size."""
    rope: Annotated[RopeSpec | None, Field(exclude_if=_is_none)] = None
    """Rotary embedding. Left out: theta 10,000, no scaling, for a model without other positions (learned,
    sinusoidal, ALiBi); a model with those has none. See ``ModelSpec.rotary``."""
    rope_local: Annotated[RopeSpec | None, Field(exclude_if=_is_none)] = None
    """The rotary embedding of ``local`` (sliding-window) layers where it differs from ``rope``, the global
    layers' (Gemma 3: theta 10,000 unscaled locally, 1,000,000 globally, config.json's rope_parameters per layer
    type or rope_local_base_freq); None: every layer rotates by ``rope``."""
    nope_layers: Annotated[NopeLayers, Field(exclude_if=_is_default("none"))] = "none"
    """Layers without RoPE: ``none``; ``global``, the global layers of a model with local ones (EXAONE 4) or with
    linear ones (Kimi-Linear's MLA layers: their rope part is cached but never rotated)."""
    alibi: Annotated[bool, Field(exclude_if=_is_false)] = False
    """ALiBi position biases (BLOOM, MPT): head h adds slope_h x key position to its scores, no RoPE, no learned
    positions (``mha_cli.nn.alibi``)."""

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, data: Any) -> Any:
        """The head fields left out, derived (``resolve_attention``) from the model width a ``ModelSpec`` passes in;
        a problem is refused here, so the model's other fields are still checked and named."""
        if not isinstance(data, dict):
            return data
        fields = {key: value for key, value in data.items() if key != MODEL_WIDTH_KEY}
        try:
            return resolve_attention(fields, data.get(MODEL_WIDTH_KEY))
        except ValueError:
            if set(fields) - set(cls.model_fields):  # an unknown field (n_kv_headz) may be the one meant: its
                return fields  # error names it, and the misses it causes are dropped (validation.py)
            raise

    @model_validator(mode="after")
    def _consistent(self) -> "AttentionSpec":
        if self.mla is not None:
            self._check_mla(self.mla)
        else:
            self._check_heads()
            self._check_global_heads()
        if self.qk_norm_span == "projection" and not self.qk_norm:
            raise ValueError("qk_norm_span projection needs qk_norm")
        if self.qk_norm_type == "layernorm" and (not self.qk_norm or self.qk_norm_span != "head"):
            raise ValueError("qk_norm_type layernorm is a per-head q/k norm: it needs qk_norm, span head")
        return self

    def _check_mla(self, mla: MLASpec) -> None:
        if self.variant != "MLA":
            raise ValueError(f"variant is {self.variant} but an mla block is given: set variant to MLA or drop mla")
        if self.n_kv_heads != self.n_heads:
            raise ValueError(
                f"MLA decompresses one K/V per query head: n_kv_heads ({self.n_kv_heads}) must equal n_heads ({self.n_heads})"
            )
        if self.head_dim != mla.qk_head_dim:
            raise ValueError(
                f"MLA head_dim ({self.head_dim}) must equal qk_nope_head_dim + qk_rope_head_dim ({mla.qk_head_dim})"
            )
        unsupported = {
            "global_n_kv_heads": self.global_n_kv_heads is not None, "global_head_dim": self.global_head_dim is not None,
            "global_k_eq_v": self.global_k_eq_v, "output_gate": self.output_gate, "softplus_gate": self.softplus_gate is not None, "sinks": self.sinks,
            "qk_norm_span projection": self.qk_norm_span == "projection", "alibi": self.alibi,
        }  # fmt: skip
        for name, on in unsupported.items():
            if on:
                raise ValueError(f"{name} is for MHA/GQA/MQA attention, not MLA")

    def _check_heads(self) -> None:
        if self.variant == "MLA":
            raise ValueError("variant MLA needs an mla block with at least kv_lora_rank")
        if self.n_kv_heads > self.n_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must not exceed n_heads ({self.n_heads})")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads})")
        implied = variant_for_heads(self.n_heads, self.n_kv_heads)
        if self.variant != implied and not (self.n_heads == 1 and self.variant in ("MHA", "MQA")):
            raise ValueError(
                f"variant {self.variant} does not match n_heads ({self.n_heads}) and n_kv_heads ({self.n_kv_heads}),"
                f" which make it {implied}"
            )

    def _check_global_heads(self) -> None:
        kv_heads = self.global_n_kv_heads
        if kv_heads is not None and (kv_heads > self.n_heads or self.n_heads % kv_heads):
            raise ValueError(f"global_n_kv_heads ({kv_heads}) must divide n_heads ({self.n_heads}) and not exceed it")

    @property
    def per_kind_geometry(self) -> bool:
        """Whether the ``global`` layers cache at other KV heads or another head width than the others."""
        return self.kv_heads_of("global") != self.n_kv_heads or self.head_dim_of("global") != self.head_dim

    def kv_heads_of(self, kind: LayerKind | None) -> int:
        """KV heads of a layer of ``kind`` (None: the model's default, every layer but a per-kind global one's)."""
        return (self.global_n_kv_heads or self.n_kv_heads) if kind == "global" else self.n_kv_heads

    def head_dim_of(self, kind: LayerKind | None) -> int:
        """Head width of a layer of ``kind`` (None: the model's default, every layer but a per-kind global one's)."""
        return (self.global_head_dim or self.head_dim) if kind == "global" else self.head_dim

    @property
    def q_per_kv(self) -> int:
        """Query heads that share one KV head (GQA group size; n_heads for MQA, 1 for MHA)."""
        return self.n_heads // self.n_kv_heads

    @property
    def width(self) -> int:
        """n_heads * head_dim: width of the concatenated heads (may differ from d_model)."""
        return self.n_heads * self.head_dim


def _positive_int(value: object) -> int | None:
    """``value`` when it is a positive int (not a bool), else None: a raw field the part's validation will judge."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _mla_head_dim(mla: object) -> int | None:
    """qk_nope_head_dim + qk_rope_head_dim of an ``mla`` block given as a model or a raw dict (its defaults filled);
    None when a raw value is not a count (the block's own validation reports it)."""
    if isinstance(mla, MLASpec):
        return mla.qk_head_dim
    if not isinstance(mla, dict):
        return None
    parts = [mla.get(name, MLASpec.model_fields[name].default) for name in ("qk_nope_head_dim", "qk_rope_head_dim")]
    if any(not isinstance(part, int) or isinstance(part, bool) for part in parts):
        return None
    return sum(parts)


def resolve_attention(attention: dict[str, Any], d_model: object) -> dict[str, Any]:
    """``attention`` (a raw part) with the head fields it leaves out derived, the one place they are: ``head_dim``
    from ``d_model`` (MLA: its qk widths), ``n_kv_heads`` from the variant (MLA: n_heads), ``variant`` from the head
    counts. Raw values that are not counts are left for the part's validation to name."""
    derived = ("n_kv_heads", "head_dim", "variant")  # None, as an old file may say: left out
    out = {key: value for key, value in attention.items() if not (key in derived and value is None)}
    variant = upper_variant(out.get("variant"))
    n_heads = _positive_int(out.get("n_heads"))
    if out.get("mla") is not None:  # a variant other than MLA beside it is refused by the part's own check
        qk_head_dim = _mla_head_dim(out["mla"])
        if qk_head_dim is not None and qk_head_dim > _MAX_HEAD_DIM:
            raise ValueError(
                f"MLA head width qk_nope_head_dim + qk_rope_head_dim ({qk_head_dim:,}) must be at most 16,384"
            )
        out.setdefault("variant", "MLA")
        if n_heads is not None:
            out.setdefault("n_kv_heads", n_heads)
        if qk_head_dim is not None:
            out.setdefault("head_dim", qk_head_dim)
        return out
    if n_heads is None:
        return out
    width = _positive_int(d_model)
    if out.get("head_dim") is None and width is not None:
        if width % n_heads:
            raise ValueError(f"d_model ({width}) is not divisible by n_heads ({n_heads}): set head_dim explicitly")
        if width // n_heads > _MAX_HEAD_DIM:  # the bound an explicit head_dim has, for a derived one
            raise ValueError(
                f"d_model / n_heads = {width // n_heads:,} exceeds the widest head ({_MAX_HEAD_DIM:,}):"
                " use more heads or a narrower explicit head_dim"
            )
        out["head_dim"] = width // n_heads
    if out.get("n_kv_heads") is None:
        if variant == "GQA":
            raise ValueError("variant GQA needs n_kv_heads (a divisor of n_heads between 1 and n_heads)")
        out["n_kv_heads"] = 1 if variant == "MQA" else n_heads
    n_kv_heads = _positive_int(out["n_kv_heads"])
    if out.get("variant") is None and n_kv_heads is not None:  # counts that cannot be shared: the part refuses
        out["variant"] = variant_for_heads(n_heads, n_kv_heads)
    return out


class LayerPatternSpec(_Strict):
    """Which kind of mixer and feed-forward each layer has, and how far back a local or chunked layer sees."""

    pattern: list[LayerKind] | None = Field(default=None, min_length=1, max_length=_MAX_LAYERS)
    """Kinds of layers, repeated cyclically from layer 0: ["local", "global"] alternates (Gemma 2).
    Without it, a model with a sliding window uses it on every layer (Mistral-7B-v0.1), one with an
    ``attention_chunk`` chunks every layer, any other attends globally everywhere."""
    mlp_pattern: Annotated[
        Annotated[list[MlpKind], Field(min_length=1, max_length=_MAX_LAYERS)] | None, Field(exclude_if=_is_none)
    ] = None
    """Each layer's feed-forward, repeated cyclically from layer 0 as ``pattern`` is, where no period of
    ``block.moe``'s describes it (Nemotron-H: MoE after most mixers, none after a Mamba-2 block that an attention
    block follows); None: MoE on the layers ``block.moe`` says, dense on the others."""
    sliding_window: Annotated[int, Field(gt=0, le=MAX_TOKENS)] | None = None
    """Tokens a local (sliding-window) layer attends to and caches."""
    attention_chunk: Annotated[int, Field(gt=0, le=MAX_TOKENS)] | None = None
    """Tokens per chunk of a ``chunked`` layer (Llama-4's attention_chunk_size): it caches at most one chunk."""
    n_kv_shared_layers: Annotated[int, Field(gt=0, le=_MAX_LAYERS)] | None = None
    """The last N layers reuse the K/V of earlier layers and cache nothing (Gemma-3n's num_kv_shared_layers);
    ``None``: every attention layer caches its own."""
    shared_kv_projections: Annotated[bool, Field(exclude_if=_is_default(True))] = True
    """Whether the K/V-sharing layers keep k_proj, v_proj and the k norm (Gemma-3n's, loaded and unused); false:
    they hold only q_proj, o_proj and the q norm (Gemma 4's ``Gemma4TextAttention``, transformers 5.25, and vLLM's
    ``Gemma4Attention``, 0.34.0: "K/V come from the target layer's cache, so like HF this layer only has
    q_proj")."""
    shared_d_ff: Annotated[Width | None, Field(exclude_if=_is_none)] = None
    """The dense MLP width of the K/V-sharing layers where it differs from ``block.d_ff`` (Gemma 4's
    ``use_double_wide_mlp``: 2 x intermediate_size on those layers, ``Gemma4TextMLP``, transformers 5.25, and vLLM
    0.34.0's ``Gemma4MLP``); None: ``block.d_ff``."""

    @model_validator(mode="after")
    def _kinds_described(self) -> "LayerPatternSpec":
        if self.pattern and "local" in self.pattern and self.sliding_window is None:
            raise ValueError("pattern has local layers but sliding_window is not set")
        if self.pattern and "chunked" in self.pattern and self.attention_chunk is None:
            raise ValueError("pattern has chunked layers but attention_chunk is not set")
        if self.n_kv_shared_layers is None and (not self.shared_kv_projections or self.shared_d_ff is not None):
            raise ValueError(
                "shared_kv_projections and shared_d_ff describe the K/V-sharing layers: set n_kv_shared_layers"
            )
        return self


class BlockSpec(_Strict):
    """One decoder block around its mixer: the norms and where they sit, the residual, the MLP or MoE."""

    d_ff: Width
    """MLP hidden width (dense layers)."""
    mlp: MlpType = "gated"
    """gated (SwiGLU, GeGLU): gate, up, down, 3 * d_model * d_ff; plain (GELU): up, down, 2 * d_model * d_ff. The
    routed and shared experts of an MoE layer are MLPs of the same kind (Nemotron-H's are plain)."""
    mlp_bias: bool = False
    """Whether the dense MLP's projections have biases."""
    activation: Annotated[Activation | None, Field(exclude_if=_is_none)] = None
    """The dense MLP's nonlinearity (on the gate of a gated MLP, on the hidden layer of a plain one; MoE experts
    keep SiLU); None: the kind's own, SiLU for gated (SwiGLU), exact GELU for plain. Gemma: gelu_tanh (GeGLU);
    GPT-2, GPT-Neo, StarCoder2: gelu_tanh; OPT, CTRL: relu; Persimmon: relu2 (squared ReLU)."""
    moe: MoESpec | None = None
    """The mixture-of-experts MLP of the layers ``moe.is_moe_layer`` (or ``layers.mlp_pattern``) names; None: dense."""
    norm: NormType = "rmsnorm"
    """The kind of every norm of width d_model: RMSNorm (Llama) or LayerNorm (GPT-2)."""
    norm_bias: Annotated[bool, Field(exclude_if=_is_default(True))] = True
    """Whether a ``layernorm`` has a bias (Cohere's have none); an RMSNorm never has one."""
    norm_weights: Annotated[bool, Field(exclude_if=_is_default(True))] = True
    """Whether the norms carry weights: false for OLMo's non-parametric LayerNorm (neither weight nor bias)."""
    n_norms: Annotated[int, Field(ge=0, le=8)] = 2
    """Norms of width d_model in each block: 2 pre-norm (Llama), 4 with post-norms (Gemma 2/3), 1 parallel (Falcon)."""
    norm_placement: Annotated[NormPlacement, Field(exclude_if=_is_default("pre"))] = "pre"
    """Of a two-norm block: ``pre`` normalises each sublayer's input (Llama), ``post`` its output inside the residual
    (OLMo 2's post_attention_layernorm and post_feedforward_layernorm, no input norm); the same weights either way."""
    norm_eps: Annotated[float, Field(gt=0, lt=1, exclude_if=_is_default_eps)] = DEFAULT_NORM_EPS
    """Epsilon of every RMSNorm / LayerNorm (rms_norm_eps, layer_norm_epsilon); Qwen, Gemma, DeepSeek: 1e-6."""
    norm_weight_offset: Annotated[float, Field(ge=-1, le=1, exclude_if=_is_zero)] = 0.0
    """Added to every RMSNorm weight (the q/k norms' too) before it multiplies: Gemma's norms multiply by
    (1 + weight), 1.0, their stored weights the offset from identity (a fresh norm's weights 1 - offset). With an
    offset the product is taken in float32 before the cast back (Gemma's order); 0: Llama's weight as stored. A
    LayerNorm's weight takes it too (Nemotron's LayerNorm1P: 1 + weight, its bias as stored)."""
    first_input_norm: Annotated[bool, Field(exclude_if=_is_default(True))] = True
    """Whether the first layer norms its attention input (ModernBERT's decoder: not, its embeddings are normed):
    false, that layer has one norm fewer."""
    parallel_residual: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Of a two-norm block: attention and MLP both read the block's input, each through its own norm, and their
    outputs are added to it, x + attn(norm1(x)) + mlp(norm2(x)) (GPT-NeoX's use_parallel_residual)."""
    normed_residual: Annotated[NormedResidual | None, Field(exclude_if=_is_none)] = None
    """MiniMax's scaled residual around normed inputs (a two-norm pre-norm block); None: Llama's
    x + sublayer(norm(x))."""
    multipliers: Annotated[Multipliers | None, Field(exclude_if=_is_none)] = None
    """Fixed factors on embeddings, attention, mixer, MLP and residual branches (``Multipliers``: Falcon-H1's,
    Granite-4.0-H's); None: none. Built in pre-norm blocks of two norms. Arithmetic only: no weight, no size."""

    @model_validator(mode="after")
    def _layout_consistent(self) -> "BlockSpec":
        two_pre = self.n_norms == 2 and self.norm_placement == "pre"
        if self.norm_placement != "pre" and self.n_norms != 2:
            raise ValueError(f"norm_placement {self.norm_placement} places two norms a block, not {self.n_norms}")
        if self.normed_residual is not None and not two_pre:
            raise ValueError("normed_residual scales the residual of a two-norm pre-norm block")
        if self.parallel_residual and not two_pre:
            raise ValueError("parallel_residual is a block of two pre-norms (a one-norm block is parallel already)")
        if not self.first_input_norm and not two_pre:
            raise ValueError("first_input_norm false drops the input norm of a two-norm pre-norm block")
        if not self.norm_weights and (self.norm != "layernorm" or self.norm_bias or self.norm_weight_offset):
            raise ValueError("norm_weights false is OLMo's LayerNorm without weight or bias: norm layernorm, no bias")
        return self

    @property
    def is_two_norm_pre(self) -> bool:
        """A block of two pre-norms (Llama's): the layout the residual variants and ``mlp_pattern``'s none build on."""
        return self.n_norms == 2 and self.norm_placement == "pre"


class PerLayerInputs(_Strict):
    """Gemma 4's per-layer embeddings (E2B, E4B; transformers 5.25 ``Gemma4TextModel``, vLLM 0.34.0
    ``Gemma4Model``): a second token table of ``vocab_size`` rows by n_layers x ``width``
    (``embed_tokens_per_layer``) and a projection of the token embeddings to the same width
    (``per_layer_model_projection``, normed over each layer's ``width`` by ``per_layer_projection_norm``) give
    every layer its own ``width`` inputs per token; each layer gates them from its hidden state
    (``per_layer_input_gate``, d_model -> width), projects them back (``per_layer_projection``, width -> d_model),
    norms the result (``post_per_layer_input_norm``) and adds it to the residual after its MLP."""

    width: Width
    """Each layer's share of the table (hidden_size_per_layer_input: 256 in E2B and E4B)."""
    vocab_size: Annotated[int, Field(gt=0, le=MAX_VOCAB)]
    """Rows of the per-layer table (vocab_size_per_layer_input: 262,144)."""


class EmbeddingSpec(_Strict):
    """The model's two ends: the token (and position) tables below the first layer; the final norm and the LM head
    above the last."""

    vocab_size: Annotated[int, Field(gt=0, le=MAX_VOCAB)]
    """Rows of the token embedding and of the LM head."""
    tied: bool = False
    """Whether the output head shares the input embedding matrix."""
    positions: Annotated[int, Field(ge=0, le=MAX_TOKENS)] = 0
    """Learned absolute positions, rows of the position table (GPT-2: 1024); 0 for RoPE models."""
    position_offset: Annotated[int, Field(ge=0, le=16, exclude_if=_is_zero)] = 0
    """Rows of the learned position table before position 0's (OPT, BioGPT: 2); ``positions`` counts every row."""
    sinusoidal: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Fixed sinusoidal position embeddings added to the token embeddings (CTRL's, ``mha_cli.nn.sinusoidal``): no
    weights, no RoPE."""
    token_types: Annotated[int, Field(ge=0, le=1024, exclude_if=_is_zero)] = 0
    """Rows of a token-type table (BERT's ``type_vocab_size``) whose row 0 is added to every token's embedding (a
    causal LM passes no token types); 0: none."""
    scaled: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Whether the token embeddings are multiplied by sqrt(d_model) (Gemma), the factor first cast to the
    activations' dtype (as transformers does: 55.43 is 55.5 in bf16)."""
    width: Annotated[Annotated[int, Field(gt=0, le=1 << 20)] | None, Field(exclude_if=_is_none)] = None
    """The width of the embedding tables (tokens, positions, token types, the embedding norm), which a linear with
    bias projects to d_model (ELECTRA's ``embedding_size`` where it differs from hidden_size, RemBERT's
    ``input_embedding_size``); the head reads at this width behind ``lm_head_transform``; None: d_model, no
    projection."""
    normed: Annotated[bool, Field(exclude_if=_is_false)] = False
    """A norm of the model's kind on the token embeddings before the first layer (BLOOM's
    word_embeddings_layernorm): one more d_model-wide norm."""
    final_norm: Annotated[bool, Field(exclude_if=_is_default(True))] = True
    """Whether a norm follows the last layer (a post-LN model's last layer ends in one: GPT-1 has no other)."""
    lm_head_bias: Annotated[bool, Field(exclude_if=_is_false)] = False
    """Whether the LM head has a bias, vocab_size values (GPT-J, CodeGen, Phi; CTRL's beside its tied matrix)."""
    lm_head_transform: Annotated[Activation | None, Field(exclude_if=_is_none)] = None
    """A transform before the LM head: a linear with bias (d_model -> the embedding width), this activation and a
    norm of the model's kind (BERT's ``cls.predictions.transform``, RoBERTa's ``lm_head.dense``/``layer_norm``);
    None: none."""
    lm_head_transform_bias: Annotated[bool, Field(exclude_if=_is_default(True))] = True
    """Whether ``lm_head_transform``'s linear has a bias (ModernBERT's decoder: ``classifier_bias``, none)."""
    lm_head_size: Annotated[Annotated[int, Field(gt=0, le=1 << 20)] | None, Field(exclude_if=_is_none)] = None
    """The width ``lm_head_transform`` maps to and the untied LM head reads, when not the embedding width (RemBERT's
    ``output_embedding_size``); None: the embedding width."""
    final_logit_softcap: Annotated[_Factor | None, Field(exclude_if=_is_none)] = None
    """Output logits soft-capped as cap * tanh(logit / cap) (Gemma 2's final_logit_softcapping: 30); None:
    uncapped."""
    logit_scale: Annotated[float, Field(gt=0, exclude_if=_is_default(1.0))] = 1.0
    """The final logits multiplied by it (Cohere's logit_scale); 1: unscaled."""
    per_layer_inputs: Annotated[PerLayerInputs | None, Field(exclude_if=_is_none)] = None
    """Gemma 4's per-layer embeddings and their projections (``PerLayerInputs``); None: none."""

    @model_validator(mode="after")
    def _ends_consistent(self) -> "EmbeddingSpec":
        if self.position_offset and self.position_offset >= self.positions:
            raise ValueError(f"position_offset ({self.position_offset}) needs a learned position table longer than it")
        if self.lm_head_size is not None and (self.lm_head_transform is None or self.tied):
            raise ValueError("lm_head_size is the width of an untied head behind lm_head_transform")
        return self


class ModelSpec(_Strict):
    """A decoder-only transformer's geometry: what the KV cache and the parameter count depend on, in parts.

    A file written before the parts (every field at the top level) is read by ``core.model_migration``."""

    name: str = "custom"
    """What the model is called in the output (a preset's name, a config's ``_name_or_path``)."""
    source: str | None = None
    """Where the numbers come from (a paper, a config.json, the recommender)."""
    family: Annotated[str, Field(max_length=64)] | None = None
    """The transformers ``model_type`` of its decoder family (``core.families``): how its weights are named and what
    the built decoder does not reproduce of it; None: a decoder of no registered family."""
    d_model: Width
    """Residual stream width (hidden_size)."""
    n_layers: Annotated[int, Field(gt=0, le=_MAX_LAYERS)]
    """Decoder layers (num_hidden_layers)."""
    context_length: Annotated[int, Field(gt=0, le=MAX_TOKENS)] | None = None
    """Context the model was trained for (config.json's max_position_embeddings), if known."""
    attention: AttentionSpec
    """The attention of every attending layer: heads, projections, scores, positions."""
    layers: LayerPatternSpec = LayerPatternSpec()
    """Which kind each layer is (global, local, chunked, linear; its feed-forward) and the local layers' reach."""
    block: BlockSpec
    """The block around each layer's mixer: norms, residual, MLP or MoE."""
    embeddings: EmbeddingSpec
    """The token tables, the final norm and the LM head."""
    recurrent: RecurrentSpec | None = None
    """The fixed-state mixer of ``linear`` layers (and of every layer when ``on_attention_layers``)."""
    vision: Annotated[VisionTowerSpec | None, Field(exclude_if=_is_none)] = None
    """A multimodal model's vision encoder and projector (counted in the weights, profiled by vLLM); None: a text
    model, or a tower ``core.vision_tower`` does not list (named in the import's assumptions)."""
    wrapper: Annotated[str | None, Field(max_length=128, exclude_if=_is_none)] = None
    """The class a config.json's ``architectures`` names around the language model read from its ``text_config``
    (Kimi-K2.5's ``KimiK25ForConditionalGeneration``): what the engines' registries load; None: not wrapped."""

    @model_validator(mode="before")
    @classmethod
    def _from_parts(cls, data: Any) -> Any:
        """The flat (pre-parts) form moved into its parts, then the attention's left-out head fields derived."""
        if not isinstance(data, dict):
            return data
        data = nest_flat_fields(data)
        attention = data.get("attention")
        if isinstance(attention, dict) and "d_model" in data:  # the width its head_dim derives from
            data = {**data, "attention": {**attention, MODEL_WIDTH_KEY: data["d_model"]}}
        return data

    @model_validator(mode="after")
    def _parts_agree(self) -> "ModelSpec":
        self._check_layer_pattern()
        self._check_mlp_pattern()
        attention, embeddings = self.attention, self.embeddings
        if attention.rope_local is not None and self.rotary is None:
            raise ValueError(
                "attention.rope_local is the RoPE of local layers, but this model has other positions (learned, sinusoidal, ALiBi)"
            )
        positions = [attention.alibi, bool(embeddings.positions), embeddings.sinusoidal, attention.rope is not None]
        if sum(positions) > 1:
            raise ValueError("alibi, learned, sinusoidal and rotary positions exclude one another")
        if embeddings.width not in (None, self.d_model) and embeddings.lm_head_transform is None:
            raise ValueError(
                "embeddings.width other than d_model needs embeddings.lm_head_transform (the head reads at that width)"
            )
        return self

    def _check_layer_pattern(self) -> None:
        layers = self.layers
        if layers.pattern and "linear" in layers.pattern and self.recurrent is None:
            raise ValueError("layers.pattern has linear layers but no recurrent block describes their state")
        if (layers.n_kv_shared_layers or 0) >= self.n_layers:
            raise ValueError(
                f"n_kv_shared_layers ({layers.n_kv_shared_layers}) must be below n_layers ({self.n_layers}):"
                " some layer must store the K/V the others share"
            )
        shared = layers.n_kv_shared_layers or 0
        if shared and layers.pattern:  # trial 354 #1: the kinds the shared layers reuse must have a layer caching them
            caching = self.n_layers - shared
            orphans = [kind for kind in dict.fromkeys(layers.pattern)
                       if kind != "linear" and self.count_layers(kind) and not self.count_layers(kind, caching)]  # fmt: skip
            if orphans:
                raise ValueError(
                    f"n_kv_shared_layers ({shared}) leaves no {' or '.join(orphans)} layer among the first {caching}"
                    " to hold the K/V its shared layers of that kind reuse (transformers refuses it too)"
                )
        if layers.pattern and len(layers.pattern) > self.n_layers:
            raise ValueError(
                f"layers.pattern has {len(layers.pattern)} entries but the model has {self.n_layers} layers"
            )

    def _check_mlp_pattern(self) -> None:
        pattern = self.layers.mlp_pattern
        if not pattern:
            return
        if len(pattern) > self.n_layers:
            raise ValueError(f"mlp_pattern has {len(pattern)} entries but the model has {self.n_layers} layers")
        moe = self.block.moe
        if ("moe" in pattern) != (moe is not None):
            raise ValueError("mlp_pattern lists moe layers exactly when an moe block describes them")
        if moe is not None and (moe.n_dense_layers or moe.layer_period != 1 or moe.layer_offset):
            raise ValueError(
                "mlp_pattern says which layers are MoE: drop moe's n_dense_layers, layer_period, layer_offset"
            )
        block = self.block
        simple = block.is_two_norm_pre and not block.parallel_residual and block.normed_residual is None
        if "none" in pattern and not simple:
            raise ValueError("a layer without an MLP is a two-norm pre-norm block that drops its MLP and second norm")

    # Derived values -------------------------------------------------------------------------

    @property
    def rotary(self) -> RopeSpec | None:
        """The RoPE the model applies: ``attention.rope``, else the default for a model without other positions."""
        attention, embeddings = self.attention, self.embeddings
        if attention.rope is not None:
            return attention.rope
        return None if embeddings.positions or attention.alibi or embeddings.sinusoidal else RopeSpec()

    def layer_kind(self, layer: int) -> LayerKind:
        """The kind of layer ``layer`` (0-based): the pattern's entry, else local with a sliding window,
        chunked with an attention chunk, global otherwise."""
        if self.layers.pattern:
            return self.layers.pattern[layer % len(self.layers.pattern)]
        if self.layers.sliding_window is not None:
            return "local"
        if self.layers.attention_chunk is not None:
            return "chunked"
        return "global"

    def count_layers(self, kind: LayerKind, among_first: int | None = None) -> int:
        """Layers of ``kind`` among the first ``among_first`` layers (default: all): whole repeats of the pattern,
        then its first ``layers % len`` entries."""
        layers = self.n_layers if among_first is None else among_first
        if not self.layers.pattern:
            return layers if self.layer_kind(0) == kind else 0
        repeats, rest = divmod(layers, len(self.layers.pattern))
        return repeats * self.layers.pattern.count(kind) + self.layers.pattern[:rest].count(kind)

    def token_layer_kinds(self) -> dict[LayerKind, int]:
        """The layers that cache tokens (``caches_tokens``) by kind, counted without visiting each layer; the kinds in
        the order their first layer comes."""
        caching = self.n_layers - (self.layers.n_kv_shared_layers or 0)  # the shared layers are the last ones
        kinds = self.layers.pattern[:caching] if self.layers.pattern else [self.layer_kind(0)]
        return {kind: self.count_layers(kind, caching) for kind in dict.fromkeys(kinds) if kind != "linear"}

    def caches_tokens(self, layer: int) -> bool:
        """Whether layer ``layer`` stores per-token K/V of its own (not a linear layer, not a KV-sharing one)."""
        return self.layer_kind(layer) != "linear" and layer < self.n_layers - (self.layers.n_kv_shared_layers or 0)

    def shares_kv(self, layer: int) -> bool:
        """Whether layer ``layer`` is one of the last ``n_kv_shared_layers``, reusing an earlier layer's K/V."""
        return layer >= self.n_layers - (self.layers.n_kv_shared_layers or 0)

    def mlp_width(self, layer: int) -> int:
        """The dense MLP width of layer ``layer``: ``layers.shared_d_ff`` on a K/V-sharing layer where set (Gemma 4
        E2B's double-wide MLP), else ``block.d_ff``."""
        shared_d_ff = self.layers.shared_d_ff
        return shared_d_ff if shared_d_ff is not None and self.shares_kv(layer) else self.block.d_ff

    @property
    def widest_mlp(self) -> int:
        """The widest dense MLP of any layer (``mlp_width``): an activation peak's (review 376 #1)."""
        return max(self.block.d_ff, self.layers.shared_d_ff or 0)

    @property
    def n_wide_mlp_layers(self) -> int:
        """The dense layers at ``layers.shared_d_ff`` rather than ``block.d_ff`` (Gemma 4 E2B's 20); 0 without."""
        if self.layers.shared_d_ff is None:
            return 0
        return sum(self.shares_kv(i) and self.mlp_kind(i) == "dense" for i in range(self.n_layers))

    def mlp_kind(self, layer: int) -> MlpKind:
        """The feed-forward of layer ``layer`` (0-based): ``mlp_pattern``'s entry, else MoE where ``moe`` says
        (``MoESpec.is_moe_layer``), dense elsewhere."""
        if self.layers.mlp_pattern:
            return self.layers.mlp_pattern[layer % len(self.layers.mlp_pattern)]
        return "moe" if self.block.moe is not None and self.block.moe.is_moe_layer(layer) else "dense"

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` has an MoE MLP; False without ``moe``."""
        return self.mlp_kind(layer) == "moe"

    def has_mlp(self, layer: int) -> bool:
        """Whether layer ``layer`` has a feed-forward (dense or MoE) and the norm before it."""
        return self.mlp_kind(layer) != "none"

    @property
    def n_moe_layers(self) -> int:
        """Layers with an MoE MLP."""
        return sum(self.is_moe_layer(i) for i in range(self.n_layers)) if self.block.moe is not None else 0

    @property
    def n_dense_mlp_layers(self) -> int:
        """Layers with a dense MLP, ``d_ff`` wide."""
        return sum(self.mlp_kind(i) == "dense" for i in range(self.n_layers))

    def holds_state(self, layer: int) -> bool:
        """Whether layer ``layer`` keeps the fixed per-sequence state of ``recurrent``."""
        if self.recurrent is None:
            return False
        return self.recurrent.on_attention_layers or self.layer_kind(layer) == "linear"

    @property
    def n_state_layers(self) -> int:
        """Layers that keep the fixed per-sequence state (``holds_state``)."""
        if self.recurrent is None:
            return 0
        return self.n_layers if self.recurrent.on_attention_layers else self.count_layers("linear")

    @property
    def attention_free(self) -> bool:
        """No layer attends (Mamba, Mamba-2): every layer is ``linear``, so nothing is cached per token and the head
        fields (``n_heads`` 1, ``head_dim``) are placeholders no figure reads."""
        return self.count_layers("linear") == self.n_layers

    @property
    def n_local_layers(self) -> int:
        """Layers that cache at most ``sliding_window`` tokens."""
        return self.count_layers("local")

    @property
    def n_global_layers(self) -> int:
        """Layers that attend to every token."""
        return self.count_layers("global")


def variant_for_heads(n_heads: int, n_kv_heads: int) -> Variant:
    """MHA when every query head has its own K/V, MQA when all share one, GQA between."""
    if n_kv_heads == n_heads:
        return "MHA"
    if n_kv_heads == 1:
        return "MQA"
    return "GQA"


SpeculativeMethod = Literal["mtp", "eagle", "eagle3", "draft_model"]
"""How drafts are proposed: the target's own MTP layers (DeepSeek's ``num_nextn_predict_layers``), EAGLE or EAGLE-3
heads, or a separate draft model (vLLM's ``speculative_config`` methods of those names)."""


class SpeculativeSpec(_Strict):
    """Speculative decoding as priced: the drafter and the acceptance length it reaches."""

    method: SpeculativeMethod
    num_speculative_tokens: Annotated[int, Field(gt=0, le=32)]
    """k: tokens the drafter proposes for each target (verification) step."""
    acceptance_length: Annotated[float, Field(ge=1, le=33)]
    """T: tokens one verification step emits per sequence on average (accepted drafts + the target's own), 1..k+1."""
    acceptance_source: str
    """Where T comes from: the input, or the published figure it defaults to (URL)."""
    draft_model: str | None = None
    """The speculative config's ``model``: the draft model or EAGLE heads as named (None for MTP: the target's)."""
    drafter: ModelSpec
    """The drafter's layers as priced: MTP and EAGLE, its decoder layers over the target's width (``n_layers`` of
    them; embedding and LM head shared with the target); a draft model, the whole model."""
    drafter_is_model: bool = False
    """The drafter has its own embedding and LM head (a draft model)."""
    extra_params: Annotated[int, Field(ge=0)] = 0
    """Parameters outside the drafter's decoder layers, whole in bf16 on every rank: MTP's eh_proj (2d x d) and its
    three norms, EAGLE's fc (2d or 3d x d)."""
    head_rows: Annotated[int, Field(ge=0)] = 0
    """An EAGLE-3 head's own LM head rows (its config's ``draft_vocab_size``, where it differs from the target's
    vocabulary), d_model wide in bf16 and split over the tensor-parallel ranks as vLLM's ``ParallelLMHead``; 0: the
    target's head is shared."""


class DeploymentSpec(_Strict):
    """How the model is served: where, how many sequences, how long, in which formats."""

    target: str | None = None
    """Hardware target id or alias (``a100``, ``h100-sxm``, ``8xh100``); see ``mha targets``."""
    seq_len: TokenCount = 8192
    """Tokens per sequence (prompt + generation) the cache must hold."""
    max_model_len: Annotated[TokenCount | None, Field(exclude_if=lambda value: value is None)] = None
    """The engine's context where it is started longer than the requests (``mha plan --max-model-len``, vLLM's
    flag): the engine is sized, checked and launched for requests of this many tokens, its pool admits those of
    ``seq_len``. None: ``seq_len``."""
    max_model_len_auto: SkipJsonSchema[Annotated[bool, Field(exclude=True)]] = False
    """``max_model_len`` is what the engine derived (``mha plan --max-model-len auto``, or -1): vLLM 0.14+ lowers it
    to the longest one request of which its pool holds where one of it does not fit (``core.engine.auto_fit``). Set by
    ``mha plan`` alone: not in the file schema, not written out."""
    batch: Annotated[int, Field(gt=0, le=1 << 20)] = 1
    """Concurrent sequences."""
    kv_dtype: KvDtype = "bf16"
    """KV cache format (see ``mha_cli.core.dtypes`` for the scales each quantised one stores)."""
    kv_fp8_variant: Annotated[Fp8Variant, Field(exclude_if=lambda value: value == "e4m3")] = "e4m3"
    """An fp8 cache's encoding, priced alike (a byte a value) but written on the launch lines: ``e4m3`` (vLLM's
    ``--kv-cache-dtype fp8``, SGLang's ``fp8_e4m3``) or ``e5m2`` (``--kv-dtype fp8_e5m2``: ``fp8_e5m2`` on both)."""
    weight_dtype: WeightDtype = "bf16"
    """Weight format for the memory plan."""
    weight_scheme: WeightScheme | None = None
    """How the checkpoint stores each linear layer, read from its quantization_config (``core.hf_quantization``):
    priced tensor by tensor while ``weight_dtype`` is the scheme's ``format``. None: every weight ``weight_dtype``
    covers in it."""
    checkpoint_format: WeightDtype | None = None
    """The format the checkpoint's own quantization_config stores its weights in (``core.hf_quantization``), kept
    when ``--weight-dtype`` prices another: a launch line loading the checkpoint as stored gets it. None: not read."""
    checkpoint_unread: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """The ``quant_method`` of a quantization_config mha could not read, whose weights ``--weight-dtype`` priced
    instead: the engines load the checkpoint as stored and refuse another ``--quantization`` (review 353 #2), so its
    lines carry none and a note says the format priced needs a checkpoint stored in it. None: read, or none."""
    checkpoint_kv_dtype: Annotated[Literal["fp8", "nvfp4"] | None, Field(exclude_if=lambda value: value is None)] = None
    """The KV-cache format a ModelOpt checkpoint declares (``kv_cache_quant_algo`` FP8 or NVFP4), which the engines
    that read it run when ``kv_dtype`` is not given (``core.engine.checkpoint_kv``, applied by ``merge_deployment``).
    None: none declared, or not one the engines run by themselves."""
    checkpoint_kv_method: Annotated[
        Literal["modelopt", "compressed-tensors"], Field(exclude_if=lambda value: value == "modelopt")
    ] = "modelopt"
    """Which checkpoint declared ``checkpoint_kv_dtype``: the engines read a ModelOpt and a compressed-tensors
    (``kv_cache_scheme``) declaration from different releases (``core.engine.checkpoint_kv``)."""
    checkpoint_headers: HeaderWeights | None = None
    """The checkpoint's weights as its safetensors headers hold them (``core.header_weights``): what prices the
    weights while ``weight_dtype`` is their ``format``. None: counted from the config."""
    tp: Annotated[int, Field(gt=0, le=4096)] | None = None
    """Tensor-parallel degree; default: the number of devices in ``target`` (1 without one)."""
    block_size: Annotated[int, Field(gt=0, le=1 << 16)] | None = None
    """Paged-cache block size in tokens; each sequence allocates whole blocks."""
    mla_cache: MlaCacheMode = "absorbed"
    """MLA only: cache the latent (absorbed) or the decompressed per-head K/V (naive)."""
    state_convention: StateConvention = "engine"
    """Fixed-state and indexer-key layers only: price them as the serving engine (vLLM) allocates them, or as
    transformers' cache classes do (what ``mha verify``'s torch ring holds); see ``StateConvention``."""
    engine: EngineName | None = None
    """Serving engine whose memory rules size the KV pool (``core.engine``); None: vllm."""
    engine_generation: GenerationId | None = None
    """The engine's generation (``--engine vllm@0.10``, ``core.engine.generations``); None: its latest modelled."""
    engine_version: EngineVersion | None = None
    """The release the user typed (``--engine vllm@0.10.2`` -> ``0.10.2``), which the launch lines are written for
    (``core.engine.flags``); None: the latest release of ``engine_generation``."""
    vllm_sampler: VllmSampler | None = None
    """vLLM: the top-k/top-p sampler its profiling run exercises (``core.engine.sampler``), as its log names it
    (``Using FlashInfer for top-p & top-k sampling``); None: the release's default."""
    kv_connector: Annotated[Literal["nixl"] | None, Field(exclude_if=lambda value: value is None)] = None
    """vLLM: the KV connector the server runs (``--kv-transfer-config``): ``nixl``, NixlConnector, as ``plan
    --disaggregated`` launches each worker; vLLM 0.9.1-0.21 then turn the hybrid KV cache manager off
    (``core.engine.vllm_rule_releases``). None: no connector."""
    vllm_awq_kernel: Literal["awq", "awq_marlin"] | None = None
    """vLLM: the kernel an AWQ checkpoint runs, as its log names it: ``awq`` (``AWQLinearMethod``, which dequantizes a
    layer's weight to fp16 for batches of 256 tokens or more: ``core.engine.activation``) where ``--quantization awq``
    is given explicitly in 0.22.1 (``awq_marlin.py`` ``override_quantization_method``: "forcing awq"); None or
    ``awq_marlin``: vLLM's own choice on CUDA, Marlin, priced as the packed weights alone."""
    vllm_mxfp4_kernel: Literal["marlin"] | None = None
    """vLLM: the MoE kernel mxfp4 experts (gpt-oss) are forced onto, ``marlin`` by ``VLLM_MXFP4_USE_MARLIN=1`` before
    the launch line (read in 0.10.1 and 0.11.2-0.23; Blackwell keeps FlashInfer in 0.11.2-0.18:
    ``core.engine.mxfp4_moe.marlin_forced``), priced at Marlin's padded shapes; None: the release's default kernel."""
    vllm_fp8_linear_kernel: Literal["marlin", "humming", "triton"] | None = None
    """vLLM: the kernel block-FP8 linear layers run, as ``--linear-backend`` names it; ``marlin`` holds per-128 group
    scales beside the weights (``core.engine.fp8_marlin``); None: the release's choice (Marlin below compute
    capability 9.0, on Ada from 0.29.0)."""
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = None
    """Share of device memory the engine may use: vLLM's ``gpu_memory_utilization`` (default 0.9), SGLang's
    ``mem_fraction_static`` (default from the GPU's size), TRT-LLM's ``free_gpu_memory_fraction`` (default 0.9,
    of the memory left after weights and activations)."""
    max_num_batched_tokens: Annotated[int, Field(gt=0, le=MAX_TOKENS)] | None = None
    """Tokens of one engine step (vLLM's profiling run, SGLang's chunked prefill); None: the engine's default."""
    max_num_seqs: Annotated[int, Field(gt=0, le=1 << 20)] | None = None
    """Sequences one engine step may hold (vLLM's ``max_num_seqs``); None: the engine's default."""
    expert_parallel: bool | None = None
    """MoE only: whole routed experts per rank (vLLM's ``--enable-expert-parallel``) instead of every expert's width
    split over the ranks that share them (None: off)."""
    dp: Annotated[int, Field(gt=0, le=4096)] | None = None
    """MoE only: DP attention over ``dp`` data-parallel ranks (``core.dp_attention``; ``--dp N``), each of tp =
    devices / (dp x pp) devices, running attention for its own requests with its own KV cache, the routed experts
    whole over all ranks and reached by all-to-all (SGLang ``--dp N --enable-dp-attention``, vLLM
    ``--data-parallel-size N --enable-expert-parallel``); implies ``expert_parallel`` (None: off)."""
    separate_servers: Annotated[bool | None, Field(exclude_if=lambda value: not value)] = None
    """MoE only: the replicas run as separate servers, each holding every routed expert (one server per replica
    behind a load balancer; ``plan --separate-servers``), not as one server whose data-parallel ranks share the
    experts, as vLLM and SGLang run replicas of an MoE model by default (``core.memory.engine_shares_experts``).
    None: the engine's default."""
    moe_a2a_backend: MoeA2aBackend | None = None
    """DP attention: how each rank's tokens reach the experts (``MoeA2aBackend``; ``--moe-a2a-backend``), read where
    DP attention is priced (``dp``, or a search's DP attention candidates); None: the engine's default, ``none`` in
    every generation modelled (``core.dp_attention.default_a2a_backend``)."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        """A field whose default is None, written as null, reads as left out (trial 379 #1: ``tp: null``, which the
        schema allows, was taken as set and crashed the commands); a null where the schema takes none stays refused
        (review 380 #5: ``seq_len: null``)."""
        if isinstance(data, dict):
            nullable = {name for name, field in cls.model_fields.items() if field.default is None}
            return {key: value for key, value in data.items() if value is not None or key not in nullable}
        return data

    @model_validator(mode="before")
    @classmethod
    def _auto_fit_is_plans_own(cls, data: Any) -> Any:
        """``max_model_len_auto`` is set by ``mha plan --max-model-len auto`` alone: a file naming it is refused as
        any field the schema does not list (review 388 #5)."""
        if isinstance(data, dict) and "max_model_len_auto" in data:
            raise PydanticCustomError("extra_forbidden", "Extra inputs are not permitted")
        return data

    @model_validator(mode="before")
    @classmethod
    def _dp_attention_is_expert_parallel(cls, data: Any) -> Any:
        """``dp`` sets ``expert_parallel`` (its experts are whole on each rank); an explicit false is refused."""
        if isinstance(data, dict) and data.get("dp") is not None:
            if data.get("expert_parallel") is False:
                raise ValueError("dp (DP attention) spreads whole experts: expert_parallel cannot be false with it")
            data = {**data, "expert_parallel": True}
            if data.get("separate_servers"):
                raise ValueError("dp (DP attention) is one server sharing the experts: leave out separate_servers")
        return data

    @model_validator(mode="before")
    @classmethod
    def _fp8_variant_from_kv_dtype(cls, data: Any) -> Any:
        """A KV dtype that names its fp8 encoding (``fp8_e5m2``) keeps it in ``kv_fp8_variant``, priced as fp8."""
        return with_fp8_variant(data)

    @model_validator(mode="after")
    def _fp8_variant_is_for_fp8(self) -> "DeploymentSpec":
        if self.kv_fp8_variant != "e4m3" and self.kv_dtype != "fp8":
            raise ValueError(
                f"kv_fp8_variant {self.kv_fp8_variant} is an fp8 cache's encoding: not for kv_dtype {self.kv_dtype};"
                " drop it"
            )
        return self

    @model_validator(mode="after")
    def _vllm_sampler_is_vllms(self) -> "DeploymentSpec":
        if self.vllm_sampler is not None and self.engine not in (None, "vllm"):
            raise ValueError(f"vllm_sampler is vLLM's profiling sampler: {self.engine} has none; drop it")
        return self

    @model_validator(mode="after")
    def _recv_interval_is_sglangs(self) -> "DeploymentSpec":
        if self.recv_interval > 1 and self.engine != "sglang":
            raise ValueError(
                "scheduler_recv_interval (--scheduler-recv-interval) is SGLang's: use --engine sglang, or drop it"
            )
        if self.recv_interval > 1 and self.dp:
            from mha_cli.core.serve.recv_interval import DP_ATTENTION_REFUSAL

            raise ValueError(DP_ATTENTION_REFUSAL)
        return self

    @property
    def recv_interval(self) -> int:
        """SGLang's ``--scheduler-recv-interval`` as priced: ``scheduler_recv_interval``, 1 where unset."""
        return self.scheduler_recv_interval or 1

    @model_validator(mode="after")
    def _vllm_awq_kernel_is_for_awq(self) -> "DeploymentSpec":
        if self.vllm_awq_kernel is not None and (self.engine not in (None, "vllm") or self.weight_dtype != "awq"):
            raise ValueError(
                f"vllm_awq_kernel is vLLM's kernel for AWQ weights: not for {self.engine or 'vllm'} with"
                f" {self.weight_dtype} weights; drop it"
            )
        return self

    @model_validator(mode="after")
    def _vllm_mxfp4_kernel_is_for_mxfp4(self) -> "DeploymentSpec":
        if self.vllm_mxfp4_kernel is not None and (self.engine not in (None, "vllm") or self.weight_dtype != "mxfp4"):
            raise ValueError(
                f"vllm_mxfp4_kernel is vLLM's kernel for mxfp4 experts (VLLM_MXFP4_USE_MARLIN): not for"
                f" {self.engine or 'vllm'} with {self.weight_dtype} weights; drop it"
            )
        return self

    @model_validator(mode="after")
    def _vllm_fp8_linear_kernel_is_for_fp8_block(self) -> "DeploymentSpec":
        if self.vllm_fp8_linear_kernel is not None and (
            self.engine not in (None, "vllm") or self.weight_dtype != "fp8-block"
        ):
            raise ValueError(
                f"vllm_fp8_linear_kernel is vLLM's kernel for block-FP8 linear layers: not for"
                f" {self.engine or 'vllm'} with {self.weight_dtype} weights; drop it"
            )
        return self

    kv_cache_memory_bytes: Annotated[int, Field(gt=0, le=1 << 50)] | None = None
    """vLLM: the KV pool per rank in bytes, set rather than derived from the memory utilisation
    (``--kv-cache-memory-bytes``; ``VLLM_CPU_KVCACHE_SPACE`` GiB on its CPU backend); None: derived."""
    shared_prefix: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    """Serving: leading prompt tokens every request shares (a system prompt), which the engine's prefix cache serves
    after the first request computes them (``core.serve.schedulers``); part of each prompt's length. None: 0."""
    prefix_caching: bool | None = None
    """Serving: the engine reuses cached prefixes (vLLM V1 ``--enable-prefix-caching``, SGLang's radix cache and
    TensorRT-LLM's block reuse); None: the engine's default (on, but off in vLLM V0 and TensorRT-LLM's C++ engine);
    False: ``--no-enable-prefix-caching``."""
    async_scheduling: bool | None = None
    """vLLM's async scheduling (``--async-scheduling`` / ``--no-async-scheduling``, ``SchedulerConfig``, from
    0.10.0): off, ``VllmConfig.max_concurrent_batches`` is the pipeline size, so a sliding window reserves blocks for
    one step in flight (``core.engine.vllm_rule_releases``); None: the release's default (off to 0.13.0, on from
    0.14.0 unless an option is incompatible)."""
    scheduler_recv_interval: Annotated[int, Field(gt=0, le=1 << 20)] | None = None
    """SGLang's ``--scheduler-recv-interval`` (from 0.5.1): while requests decode, its scheduler takes new ones off its
    socket on every N-th decode step only (``core.serve.recv_interval``), which every TTFT waits for; None: 1, every
    step."""
    shared_prefixes: Annotated[int, Field(gt=0, le=1 << 20)] | None = None
    """Serving: how many different shared prefixes of ``shared_prefix`` tokens the requests cycle through
    (conversations, documents; ``core.cost.offload_plan``); None: 1, one system prompt for all."""
    kv_offload_bytes: Annotated[int, Field(gt=0, le=1 << 50)] | None = None
    """Serving: host memory per rank for the engine's KV offload tier (``core.engine.offload``; ``--kv-offload-gib``),
    in bytes; None: no offload."""
    limit_mm_per_prompt: dict[str, Annotated[int, Field(ge=0, le=1 << 20)]] | None = None
    """vLLM's ``--limit-mm-per-prompt``: the most items of each modality (``image``, ``video``) one prompt may hold,
    which sizes its encoder profiling run; a modality not named: 999 (vLLM's default). Every modality of the
    model's tower at 0 serves text only (vLLM's ``--language-model-only``): no encoder profiling, and vLLM 0.32 does
    not load the tower. None: vLLM's defaults."""
    speculative: SpeculativeSpec | None = None
    """Serving: speculative decoding (``core.speculative``): the drafter's weights and KV cache in the memory plan,
    k drafted tokens and one verification step per T tokens in the step (None: off)."""


CONFIG_SCHEMA_VERSION = 2
"""2: the model in parts (``attention``, ``layers``, ``block``, ``embeddings``); 1: every model field at the top
level, still read (``core.model_migration``)."""


class MhaConfig(_Strict):
    """The config file ``mha recommend --out`` writes and ``mha verify`` reads (YAML or JSON)."""

    schema_version: Literal[1, 2] = CONFIG_SCHEMA_VERSION
    """The layout the file was written in (``CONFIG_SCHEMA_VERSION``); a file of version 1 is read as ever."""
    model: ModelSpec
    deployment: DeploymentSpec = Field(default_factory=DeploymentSpec)
    notes: list[str] = Field(default_factory=empty_list)
    """Free-form notes, e.g. the recommender's reasons."""
