"""Speculative decoding: the drafter, what it adds to a rank's memory, and the acceptance length it reaches.

The drafter, per ``speculative_config`` method (vLLM's names):

- ``mtp``: the target's own multi-token-prediction layers (``num_nextn_predict_layers``: DeepSeek-V3/R1, GLM-4.5+,
  Qwen3-Next; ``mtp_num_hidden_layers``: Qwen3.5/3.6, ``MTP_FIELDS``), each one decoder layer of the model's own
  kind (DeepSeek-V3's is an MoE layer) plus ``eh_proj``
  (2d x d, a plain ``nn.Linear``: bf16, whole on every rank, vLLM ``model_executor/models/deepseek_mtp.py``) and
  its ``enorm`` / ``hnorm`` / ``shared_head.norm`` norms; the embedding and LM head are the target's
  (``_maybe_share_embeddings`` / ``_maybe_share_lm_head`` in ``v1/spec_decode/llm_base_proposer.py``). Each draft
  pass runs one of the layers; with k above the layers, vLLM runs them again.
- ``eagle`` / ``eagle3``: one decoder layer over the target's hidden size (the draft config's when given) plus
  ``fc`` over 2 (EAGLE) or 3 (EAGLE-3) hidden states; embedding and head shared likewise.
- ``draft_model``: a model of its own, sharded with the target's tensor-parallel degree
  (``config/speculative.py`` ``_verify_and_get_draft_tp``: draft tp defaults to the target's).

Its KV cache shares the target's pool: vLLM V1 builds the KV cache spec from every attention layer in the config
(``get_kv_cache_spec`` in ``v1/worker/gpu_model_runner.py``), the drafter's included
(``llm_base_proposer.py`` ``_draft_attn_layer_names``), so each request holds blocks in the drafter's layers too.
The memory plan prices them as extra layers of the target's per-layer bytes (``memory_model``): exact when the
drafter's layers cache what the target's do (MTP, EAGLE over the same heads), rounded up to whole layers otherwise.
Pure Python.
"""

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from mha_cli.core.errors import BadInputError, looking_at_input
from mha_cli.core.kv import kv_footprint
from mha_cli.core.mtp_layers import declared_mtp_layers
from mha_cli.core.schemas import LayerPatternSpec, ModelSpec, SpeculativeMethod, SpeculativeSpec
from mha_cli.core.weight_bytes import rank_weight_bytes
from mha_cli.core.weight_formats import weight_format

if TYPE_CHECKING:
    from mha_cli.core.engine.flags import Release
    from mha_cli.core.engine.generations import Generation
    from mha_cli.core.engine.plan import EnginePlan
    from mha_cli.core.sources import ModelSource
    from mha_cli.core.tensor_parallel import ExpertLayout

METHODS: tuple[SpeculativeMethod, ...] = ("mtp", "eagle", "eagle3", "draft_model")
MTP_ALIASES = ("deepseek_mtp", "glm4_moe_mtp", "qwen3_next_mtp", "mimo_mtp")
"""vLLM's model-specific MTP method names, read as ``mtp``."""
MAX_SPECULATIVE_TOKENS = 32
EXTRA_DTYPE_BYTES = 2
"""eh_proj / fc and their norms: bf16 (plain ``nn.Linear`` in vLLM's drafters, not quantised)."""

MTP_LAYERS_BY_PRESET = {"deepseek-v3": 1, "deepseek-v3.2-exp": 1, "qwen3-next-80b-a3b": 1}
"""``num_nextn_predict_layers`` of the presets whose checkpoints ship MTP layers (their config.json files)."""


class PublishedAcceptance(NamedTuple):
    """A measured acceptance length: T tokens per verification step at k drafted tokens."""

    k: int
    length: float
    what: str
    url: str


PUBLISHED: dict[SpeculativeMethod, tuple[PublishedAcceptance, ...]] = {
    "mtp": (
        PublishedAcceptance(
            1,
            1.875,
            "DeepSeek-V3's MTP: second-token acceptance 85-90% (T = 1 + 0.875), 1.8x TPS",
            "https://arxiv.org/abs/2412.19437",
        ),
        PublishedAcceptance(
            3,
            2.46,
            "DeepSeek-V3.2-Exp's MTP layer as SGLang's EAGLE, 3 steps, 8 x B200, ShareGPT ('Accept length: 2.46')",
            "https://github.com/sgl-project/sgl-cookbook/blob/7b5bd9c05e3d86da5161ac2be9b91c19a34bf49d/docs/"
            "autoregressive/DeepSeek/DeepSeek-V3_2.md#L482",
        ),  # trial 318 #7: k = 3 was carried from k = 1's 0.875 a position, T = 3.31
        PublishedAcceptance(
            7,
            3.20,
            "DeepSeek-V3-0324's original MTP layer reused for k = 7, MT-bench/HumanEval/GSM8K, temperature 0",
            "https://huggingface.co/nebius/MTP-DeepSeek-V3-0324",
        ),
    ),
    "eagle": (
        PublishedAcceptance(
            2,
            1.89,
            "EAGLE Llama-3-8B-Instruct in vLLM V1, MT-bench, batch 1",
            "https://github.com/vllm-project/vllm/pull/16035",
        ),
        PublishedAcceptance(
            4,
            2.08,
            "EAGLE Llama-3-8B-Instruct in vLLM V1, MT-bench, batch 1",
            "https://github.com/vllm-project/vllm/pull/16035",
        ),
    ),
    "eagle3": (
        PublishedAcceptance(
            7,
            3.53,
            "EAGLE-3 Llama-3.1-8B-Instruct in vLLM, MT-bench, temperature 0",
            "https://github.com/vllm-project/vllm/issues/26191",
        ),
    ),
    "draft_model": (),
}


def chain_length(rate: float, k: int) -> float:
    """Mean tokens per verification step when each of k drafts is accepted with ``rate`` given the ones before:
    1 + rate + ... + rate^k (the first rejection ends the run; the target's own token always comes)."""
    return sum(rate**i for i in range(k + 1))


def rate_for(length: float, k: int) -> float:
    """The per-position rate whose ``chain_length`` at k is ``length`` (bisection; 0 <= rate <= 1)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if chain_length(middle, k) < length else (low, middle)
    return (low + high) / 2


def default_acceptance(method: SpeculativeMethod, k: int) -> tuple[float, str]:
    """(T, where it comes from) for ``method`` at ``k``: the published figure at that k, else the nearest one's
    per-position rate (``rate_for``) carried to k (between two as near, the larger k's, whose rate is the lower);
    ``BadInputError`` when none is published."""
    points = PUBLISHED[method]
    if not points:
        raise BadInputError(
            f"no published acceptance length ships for {method}: give --acceptance-length T (mean tokens per target"
            " step, from your own run's spec-decode metrics)"
        )
    nearest = min(points, key=lambda point: (abs(point.k - k), -point.k))  # a tie: the longer chain's lower rate
    if nearest.k == k:
        return nearest.length, f"{nearest.what} ({nearest.url})"
    rate = rate_for(nearest.length, nearest.k)
    length = chain_length(rate, k)
    return length, (
        f"{nearest.what}: T = {nearest.length:g} at k = {nearest.k} ({nearest.url}), carried to k = {k} at its"
        f" per-position acceptance {rate:.3f} (an assumption)"
    )


def parse_speculative_config(text: str) -> dict[str, object]:
    """vLLM's ``--speculative-config`` JSON: ``method``, ``model``, ``num_speculative_tokens`` (and
    ``acceptance_length``, ours); one line naming what is wrong otherwise."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"--speculative-config is not JSON ({exc.msg} at character {exc.pos}): give e.g."
            ' \'{"method": "mtp", "num_speculative_tokens": 1}\''
        ) from None
    if not isinstance(data, dict):
        raise BadInputError('--speculative-config: give a JSON object, e.g. \'{"method": "eagle3", ...}\'')
    known = {"method", "model", "num_speculative_tokens", "acceptance_length"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise BadInputError(f"--speculative-config: {', '.join(unknown)} not priced here; keys read: {sorted(known)}")
    return data


def resolve_method(method: object, model: object) -> SpeculativeMethod:
    """The method named (vLLM's MTP aliases read as mtp); a draft model when only a model is named."""
    if method is None:
        if model is None:
            raise BadInputError("speculative decoding needs a method or a draft model: give --draft MODEL or a method")
        return "draft_model"
    if method in MTP_ALIASES:
        return "mtp"
    if method not in METHODS:
        raise BadInputError(f"speculative method {method!r} is not priced: give one of {', '.join(METHODS)}")
    return method  # type: ignore[return-value]


def target_mtp_layers(model: ModelSpec, origin: str, kind: str) -> int:
    """The MTP layers the target declares (``core.mtp_layers.declared_mtp_layers`` of its config.json; a preset's,
    from its checkpoint); 0: none."""
    if kind in ("hf-config", "hf-cache", "hf-shipped"):
        return declared_mtp_layers(json.loads(Path(origin).read_text()))
    return MTP_LAYERS_BY_PRESET.get(model.name, 0)  # a preset, or our config of one


def has_mtp_layers(loaded: "ModelSource") -> bool:
    """Whether a loaded source declares MTP layers (``target_mtp_layers``)."""
    return target_mtp_layers(loaded.model, loaded.origin, loaded.kind) > 0


def mtp_layers(model: ModelSpec, origin: str, kind: str) -> int:
    """The target's MTP layers (``target_mtp_layers``), refused in one line where it has none."""
    count = target_mtp_layers(model, origin, kind)
    if count < 1:
        raise BadInputError(
            f"{model.name} has no MTP layers (num_nextn_predict_layers is 0 or absent): use method eagle, eagle3 or"
            " draft_model with --draft MODEL"
        )
    return count


def decoder_layers(model: ModelSpec, n_layers: int) -> ModelSpec:
    """``n_layers`` decoder layers of ``model``'s last kind (full attention; MoE when its last layer is): the
    drafter's layers for MTP and EAGLE over the target's width."""
    moe = model.block.moe
    if moe is not None:
        moe = moe.model_copy(update={"n_dense_layers": 0, "layer_period": 1, "layer_offset": 0})
    block = model.block.model_copy(update={"moe": moe})
    # full attention: no pattern, window, chunk or shared K/V (a one-layer drafter of Gemma-3n's 15 shared layers
    # would cache a negative count)
    return model.model_copy(
        update={"n_layers": n_layers, "layers": LayerPatternSpec(), "block": block, "recurrent": None}
    )


def drafter_weight_bytes(
    spec: SpeculativeSpec, tp: int, weight_dtype: str, experts: "ExpertLayout | None" = None
) -> int:
    """Bytes of the drafter on one rank of ``tp``: a draft model's own shard (bf16), or the drafter's decoder layers
    in ``weight_dtype`` (the difference a layer makes to the rank's bytes; an MTP layer's routed experts in the
    target's ``experts`` layout) plus its whole bf16 ``extra_params``."""
    drafter = spec.drafter
    if spec.drafter_is_model:
        return rank_weight_bytes(drafter, tp, "bf16")
    layout = experts if drafter.block.moe is not None else None
    if drafter.block.moe is None and weight_format(weight_dtype).scope == "experts":
        weight_dtype = "bf16"  # a format of the routed experts only (gpt-oss's mxfp4) leaves a dense layer in bf16
    more = drafter.model_copy(update={"n_layers": drafter.n_layers + 1})
    one = drafter.model_copy(update={"n_layers": 1})
    layers = rank_weight_bytes(more, tp, weight_dtype, experts=layout) - rank_weight_bytes(
        one, tp, weight_dtype, experts=layout
    )
    head = -(-spec.head_rows // tp) * drafter.d_model  # vocab-parallel: each rank its share of the rows
    return layers + (spec.extra_params + head) * EXTRA_DTYPE_BYTES


def drafter_kv_bytes_per_token(spec: SpeculativeSpec, tp: int, kv_dtype: str) -> int:
    """KV bytes one token takes in the drafter's layers on one rank (its attention layers' share of the pool)."""
    return kv_footprint(spec.drafter, seq_len=1, kv_dtype=kv_dtype, tp=tp).bytes_per_token_per_rank


def equivalent_layers(spec: SpeculativeSpec, target: ModelSpec, tp: int, kv_dtype: str) -> int:
    """Layers of the target's per-token bytes that hold the drafter's cache (rounded up)."""
    target_kv = kv_footprint(target, seq_len=1, kv_dtype=kv_dtype, tp=tp)
    per_layer = target_kv.bytes_per_token_per_rank / max(1, target_kv.n_token_layers)
    return math.ceil(drafter_kv_bytes_per_token(spec, tp, kv_dtype) / per_layer) if per_layer else 0


def memory_model(target: ModelSpec, spec: SpeculativeSpec, tp: int, kv_dtype: str) -> ModelSpec:
    """``target`` with the drafter's cache as extra full-attention layers: the model the memory plan's KV pool
    divides among requests (weights are priced apart, ``drafter_weight_bytes``)."""
    extra = equivalent_layers(spec, target, tp, kv_dtype)
    layers = target.layers
    if extra == 0:
        return target
    # The extra layers go first, each kind of the target's listed after them, so a repeating pattern keeps its
    # counts and the K/V-sharing layers stay the last ones.
    kinds = [target.layer_kind(i) for i in range(target.n_layers)]
    update: dict[str, object] = {"pattern": None if set(kinds) == {"global"} else [*["global"] * extra, *kinds]}
    if layers.mlp_pattern is not None:
        update["mlp_pattern"] = [*["dense"] * extra, *[target.mlp_kind(i) for i in range(target.n_layers)]]
    return target.model_copy(update={"n_layers": target.n_layers + extra, "layers": layers.model_copy(update=update)})


def drafter_model(draft: str) -> ModelSpec:
    """The drafter named by ``--draft`` or ``--speculative-config``'s ``model``: a preset, a config file, a model
    folder or a cached Hugging Face id; one line saying it is the drafter that could not be found or read, and how
    to name it, otherwise (a file that is no model config, say weights or a README, fails as malformed YAML)."""
    from mha_cli.core.sources import load_source

    try:
        return load_source(draft).model
    except BadInputError as exc:
        with looking_at_input(draft):
            is_file = Path(draft).expanduser().is_file()
        if is_file:
            head, _, rest = exc.message.partition(": ")
            reason = (rest if Path(draft).name in head else exc.message).split(":")[0]
            raise BadInputError(
                f"the draft model {draft} (--draft, or --speculative-config's model) is a file mha cannot read as a"
                f" model config ({reason}): give the drafter's config.json, its model folder, a preset or a Hugging"
                " Face id (org/name)"
            ) from None
        raise BadInputError(f"the draft model (--draft, or --speculative-config's model): {exc.message}") from None


def own_head_rows(draft: str, target: ModelSpec) -> int:
    """The rows of an EAGLE head's own LM head: its config.json's ``draft_vocab_size`` (trial 394 #5: EAGLE-3 heads
    such as yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, 32,000 rows, were priced as sharing the target's). vLLM 0.33
    ``llama_eagle3.py`` builds ``lm_head`` of ``draft_vocab_size`` rows (the target's vocabulary where unset) and
    maps its ids with ``d2t``; ``llm_base_proposer.py`` ``_maybe_share_lm_head`` shares the target's only where the
    checkpoint has none or one equal to it, so a head that names the field, at any size, is taken as trained and its
    own (review 396 #5). 0 where the draft is no config file (a preset) or names no ``draft_vocab_size``: the head is
    taken as shared, as vLLM 0.33 shares a checkpoint without one (vLLM 0.10's EAGLE-3 never shared it: a full head
    more, not priced)."""
    import json

    from mha_cli.core.sources import load_source

    source = load_source(draft)
    path = Path(source.origin)
    if source.kind == "preset" or not (path.is_file() or (path / "config.json").is_file()):
        return 0
    try:
        config = json.loads((path if path.is_file() else path / "config.json").read_text())
    except (OSError, ValueError):  # our own YAML config file: no draft vocabulary
        return 0
    rows = config.get("draft_vocab_size") if isinstance(config, dict) else None
    return rows if isinstance(rows, int) and rows > 0 else 0


def build_spec(
    target: ModelSpec,
    *,
    origin: str,
    kind: str,
    method: object = None,
    draft: str | None = None,
    num_speculative_tokens: int | None = None,
    acceptance_length: float | None = None,
) -> SpeculativeSpec:
    """The speculative decoding ``plan`` prices: the drafter for ``method`` (see the module docstring), k (default:
    the MTP layers, else 3) and T (given, else ``default_acceptance``), each checked in one line."""
    chosen = resolve_method(method, draft)
    head_rows = 0
    if chosen == "mtp":
        layers = mtp_layers(target, origin, kind)
        drafter, is_model = decoder_layers(target, layers), False
        # each MTP layer's eh_proj, enorm, hnorm and shared_head.norm
        extra = layers * (2 * target.d_model * target.d_model + 3 * target.d_model)
        default_k = layers
    elif chosen in ("eagle", "eagle3"):
        if draft is None:  # one dense decoder layer of the target's shape
            one = decoder_layers(target, 1)
            drafter = one.model_copy(update={"block": one.block.model_copy(update={"moe": None})})
        else:
            drafter = drafter_model(draft)
            if drafter.block.moe is not None or drafter.d_model != target.d_model:
                raise BadInputError(
                    f"{draft}: EAGLE heads are dense layers over the target's width ({target.d_model}); give the"
                    " heads' config.json, or no model to price one layer of the target's shape"
                )
        is_model = False
        extra = (2 if chosen == "eagle" else 3) * target.d_model * target.d_model
        head_rows = 0 if draft is None else own_head_rows(draft, target)
        default_k = 3
    else:
        if draft is None:
            raise BadInputError("method draft_model needs the draft model: give --draft MODEL (a preset, config or id)")
        drafter, is_model, extra, default_k = drafter_model(draft), True, 0, 3
        if drafter.embeddings.vocab_size != target.embeddings.vocab_size:
            raise BadInputError(
                f"draft {drafter.name} has a vocabulary of {drafter.embeddings.vocab_size:,}, the target {target.embeddings.vocab_size:,}:"
                " vLLM needs the same tokenizer; pick a draft of the same family"
            )
    k = default_k if num_speculative_tokens is None else num_speculative_tokens
    if not 1 <= k <= MAX_SPECULATIVE_TOKENS:
        raise BadInputError(f"--num-speculative-tokens {k}: give 1 to {MAX_SPECULATIVE_TOKENS}")
    if acceptance_length is None:
        length, source = default_acceptance(chosen, k)
    else:
        if not 1 <= acceptance_length <= k + 1:
            raise BadInputError(
                f"--acceptance-length {acceptance_length:g}: give 1 to k + 1 = {k + 1} (mean tokens per target step)"
            )
        length, source = acceptance_length, "given (--acceptance-length)"
    return SpeculativeSpec(
        method=chosen, num_speculative_tokens=k, acceptance_length=length, acceptance_source=source,
        draft_model=draft, drafter=drafter, drafter_is_model=is_model, extra_params=extra, head_rows=head_rows,
    )  # fmt: skip


def shares_pool(engine: str | None) -> bool:
    """Whether ``engine``'s KV pool, sized from the memory left, holds the drafter's weights and cache: vLLM (its
    profiling run loads both, then every attention layer takes blocks) and, priced alike, TensorRT-LLM; not SGLang
    (``SGLANG_OWN_POOL``)."""
    return (engine or "vllm") != "sglang"


SGLANG_OWN_POOL = (
    "SGLang sizes the target's pool first and gives the drafter a pool of its own of the target's tokens plus"
    " headroom (model_runner.py: draft_runner_cache_size = max_total_num_tokens + max_num_reqs x (steps x topk +"
    " draft tokens) + 100)"
)


def drafter_memory_note(
    spec: SpeculativeSpec, target: ModelSpec, tp: int, weight_dtype: str, kv_dtype: str,
    experts: "ExpertLayout | None" = None, engine: "EnginePlan | None" = None,
) -> str:  # fmt: skip
    """What the memory plan holds for the drafter, in words (weights and cache per rank); for SGLang, what comes on
    top of the target's pool and whether the share its mem_fraction_static keeps out holds it."""
    weights = drafter_weight_bytes(spec, tp, weight_dtype, experts)
    per_token = drafter_kv_bytes_per_token(spec, tp, kv_dtype)
    layers = equivalent_layers(spec, target, tp, kv_dtype)
    what = (
        f"draft model {spec.drafter.name} ({spec.drafter.n_layers} layers, bf16, sharded over tp {tp})"
        if spec.drafter_is_model
        else f"{spec.drafter.n_layers} {spec.method.upper()} layer(s) in {weight_dtype} + {spec.extra_params:,}"
        " bf16 parameters whole on each rank"
        + (
            f" + its own LM head, {spec.head_rows:,} rows (draft_vocab_size) x {spec.drafter.d_model:,} in bf16 split"
            " over the ranks (the embedding shared with the target)"
            if spec.head_rows
            else " (embedding and LM head shared with the target)"
        )
    )
    head = f"speculative decoding ({spec.method}, k = {spec.num_speculative_tokens}): the drafter, {what}"
    if engine is not None and not shares_pool(engine.name):
        k = spec.num_speculative_tokens
        tokens = engine.kv_tokens + engine.max_num_seqs * (k + k + 1) + 100
        extra = weights + tokens * per_token
        outside = int((engine.total_memory_bytes - engine.non_torch_bytes) * (1 - engine.gpu_memory_utilization))
        verdict = "within" if extra < outside else "beyond"
        return (
            f"{head}: {weights / 2**30:.2f} GiB of weights and a pool of {tokens:,} tokens x {per_token:,} B ="
            f" {tokens * per_token / 2**30:.2f} GiB per rank on top of the target's pool. {SGLANG_OWN_POOL}: together"
            f" {extra / 2**30:.2f} GiB, {verdict} the {outside / 2**30:.2f} GiB mem_fraction_static keeps out (which"
            " also holds activations and CUDA graphs); lower --mem-fraction-static if it is not"
        )
    return (
        f"{head}, adds {weights / 2**30:.2f} GiB to the weights on this rank; its cache, {per_token:,} B per token per"
        " rank, shares the KV pool (one pool holds every attention layer, the drafter's too): priced as"
        f" {layers} more layer(s) of the target's"
    )


HEADS_PLACEHOLDER = "EAGLE_HEADS_FOLDER_OR_HF_ID"
"""Stands for EAGLE heads priced without a config of their own: the launch line needs the heads' checkpoint."""
SGLANG_ALGORITHMS: dict[SpeculativeMethod, str] = {
    "mtp": "NEXTN", "eagle": "EAGLE", "eagle3": "EAGLE3", "draft_model": "STANDALONE",
}  # fmt: skip
"""SGLang's ``--speculative-algorithm`` for each method (``python/sglang/srt/server_args.py`` choices)."""


VLLM_WITHOUT_DRAFT_MODEL = ("0.11.0", "0.15.0")
"""The vLLM releases with no draft-model speculation at all (from the first, up to the second): 0.8-0.10 ran draft
models on the V0 engine, which 0.11 removed, and V1's ``v1/spec_decode/draft_model.py`` is first in 0.15.0 (read in
the wheels, ``core.engine.flags``). Every other method vLLM prices ran in every release of V1, under older spellings
before ``--speculative-config method=...`` (``deepseek_mtp`` before ``mtp``), for which the launch line is left out
with a note, not refused."""


def method_flag(engine: str, method: SpeculativeMethod) -> str | None:
    """The launch-line word that asks ``engine`` for ``method`` where a release without it has no other spelling of
    the method (``core.engine.flags`` dates it): SGLang's ``--speculative-algorithm ...`` (STANDALONE, its draft model,
    first in 0.5.2); vLLM's ``--speculative-config method=draft_model`` (``VLLM_WITHOUT_DRAFT_MODEL``); None where an
    older release spells it otherwise (vLLM's other methods) or the line is not written (TensorRT-LLM)."""
    if engine == "sglang":
        return f"--speculative-algorithm {SGLANG_ALGORITHMS[method]}"
    if engine == "vllm" and method == "draft_model":
        return f"--speculative-config method={method}"
    return None


def refuse_method_missing(spec: SpeculativeSpec, chosen: "Generation", typed: str | None) -> None:
    """Speculative decoding by a method the release meant cannot run (``--engine vllm@0.11 --draft ...``: vLLM had no
    draft model from 0.11.0 to 0.15.0) is refused in one line, as ``--kv-offload-gib`` on a release without its flag
    is, not priced with no line of its engine to run it. ``typed``: the release typed (None: the latest)."""
    from mha_cli.core.engine.flags import release_meant, setting_refusal
    from mha_cli.core.engine.release_numbers import release_key

    word = method_flag(chosen.engine, spec.method)
    if word is None:
        return
    first, until = (release_key(release) for release in VLLM_WITHOUT_DRAFT_MODEL)
    if chosen.engine == "vllm" and not first <= release_meant(chosen, typed) < until:
        return  # 0.8-0.10 on the V0 engine (before 0.8: V0's --speculative-model), V1's own from 0.15.0
    refusal = setting_refusal(f"speculative decoding ({spec.method})", chosen.engine, chosen, typed, word)
    if refusal is not None:
        raise BadInputError(refusal)


def draft_checkpoint(spec: SpeculativeSpec) -> str | None:
    """What the launch lines load as the drafter: a preset's Hugging Face id, the name given, the heads'
    placeholder for EAGLE priced without heads; None for MTP (the target's own checkpoint holds its layers)."""
    from mha_cli.core.preset_ids import checkpoint_id

    if spec.method == "mtp":
        return None
    if spec.draft_model is None:
        return HEADS_PLACEHOLDER
    return checkpoint_id(spec.draft_model) or spec.draft_model


VLLM_MTP_METHOD = "0.11.0"
"""The first vLLM release taking ``method=mtp`` (``core.engine.flags``)."""
VLLM_MTP_BY_MODEL = {
    "deepseek_v3": ("deepseek_mtp", "0.9.0"),
    "ernie4_5_moe": ("ernie_mtp", "0.10.2"),
    "qwen3_next": ("qwen3_next_mtp", "0.10.2"),
}
"""Before ``method=mtp``, vLLM named MTP by model, ``model_type`` -> (its method, the first release read with it on
the V1 engine): ``SpeculativeMethod`` lists ``deepseek_mtp`` from 0.9.0, ``ernie_mtp`` and ``qwen3_next_mtp`` from
0.10.2, and ``SpeculativeConfig.__post_init__`` drafts with the target's own MTP layers for a target of that type
(read in the wheels of 0.8.5, 0.9.0, 0.9.1, 0.10.0, 0.10.1, 0.10.1.1 and 0.10.2: ``config.py``, from 0.10.1
``config/__init__.py``). The method is written, not left to be found from the model: 0.9.x's V1 check
(``engine/arg_utils.py`` ``_is_v1_supported_oracle``) reads it from the flag's JSON and falls back to the V0 engine
without it (review 341 #1), and 0.8.5's accepts no MTP at all (V0 alone: no line, the plan prices V1). From 0.11.0
these names are read as ``mtp`` with a warning (``config/speculative.py`` ``MTP_MODEL_TYPES``); trial 339 #2:
``vllm@0.9.2`` had no vllm line."""


def vllm_mtp_method(model_type: str, release: "Release | None") -> str | None:
    """vLLM ``release``'s (None: the latest) own name for MTP on ``model_type`` before ``method=mtp``
    (``VLLM_MTP_BY_MODEL``); None where the release takes ``mtp``, or names none for the type."""
    from mha_cli.core.engine.release_numbers import release_key

    method, first = VLLM_MTP_BY_MODEL.get(model_type, (None, None))
    if release is None or method is None or release >= release_key(VLLM_MTP_METHOD):
        return None
    return method if release >= release_key(first) else None


def vllm_flags(spec: SpeculativeSpec, mtp_method: str | None = None) -> list[str]:
    """``--speculative-config '{...}'`` as ``vllm serve`` takes it (``config/speculative.py``: method, model,
    num_speculative_tokens); ``mtp_method``: MTP under the name a release before 0.11.0 takes (``vllm_mtp_method``)."""
    if mtp_method is not None and spec.method == "mtp":
        named = {"method": mtp_method, "num_speculative_tokens": spec.num_speculative_tokens}
        return ["--speculative-config", json.dumps(named, separators=(",", ":"))]
    config: dict[str, object] = {"method": spec.method}
    model = draft_checkpoint(spec)
    if model is not None:
        config["model"] = model
    config["num_speculative_tokens"] = spec.num_speculative_tokens
    return ["--speculative-config", json.dumps(config, separators=(",", ":"))]


def sglang_flags(spec: SpeculativeSpec) -> list[str]:
    """SGLang's chain of k drafts: ``--speculative-algorithm``, ``--speculative-num-steps k``,
    ``--speculative-eagle-topk 1``, ``--speculative-num-draft-tokens k + 1`` (and the draft's path)."""
    k = spec.num_speculative_tokens
    flags = ["--speculative-algorithm", SGLANG_ALGORITHMS[spec.method], "--speculative-num-steps", str(k),
             "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(k + 1)]  # fmt: skip
    model = draft_checkpoint(spec)
    if model is not None:
        flags += ["--speculative-draft-model-path", model]
    return flags
