"""Pipeline stages: which layers each of ``pp`` stages holds, and the weights it holds. Pure Python.

Stage ``s`` of ``pp`` holds a contiguous run of the L layers, as the serving engine splits them (``stage_sizes``):
L // pp each when pp divides L, else the L % pp extra layers go to the stages each engine's source names, each
layer keeping its kind (global or local attention, dense or MoE MLP); where a layer here merges the engine's layers
(Nemotron-H's mixer and feed-forward blocks), the engine's layers are split and each layer follows its mixer
(``layer_stage_sizes``); the token embedding (and learned positions)
sit on the first stage, the final norm and the LM head on the last. A tied head is the embedding matrix: the last
stage keeps a copy of it, as vLLM does, so a tied model of more than one stage holds the embedding twice. Under
tensor parallelism each stage's ranks split its layers, embedding and head as one device's ranks do
(``core.tensor_parallel``). ``verify --pp`` builds and measures exactly this layout (``mha_cli.nn.pipeline``), with
vLLM's split.
"""

import bisect
import itertools
from typing import TYPE_CHECKING

from mha_cli.core.errors import BadInputError
from mha_cli.core.inventory import tensor_groups
from mha_cli.core.params import group_params
from mha_cli.core.record import Record
from mha_cli.core.schemas import EngineName, ModelSpec
from mha_cli.core.tensor_parallel import built_vocab_padding

if TYPE_CHECKING:
    from mha_cli.core.weight_bytes import Sides


class StageLayout(Record):
    """What stage ``stage`` of ``pp`` holds."""

    stage: int
    pp: int
    first_layer: int
    n_layers: int
    embedding: bool
    """The token embedding (and learned positions): the first stage."""
    head: bool
    """The final norm and the LM head (a tied head's copy of the embedding): the last stage."""
    model_layers: int = 0
    """The whole model's layers (0: not recorded): what vLLM 0.14-0.16 checks one request of against each stage's
    pool (``core.engine.vllm_rule_releases.checks_whole_model``)."""
    model_attention_free: bool = False
    """The whole model has no layer that caches tokens (a Mamba model), as an engine reads it: a stage that holds
    only a hybrid's Mamba layers is attention-free, its model is not (vLLM's prefix cache of the states)."""


DEFAULT_SPLIT: EngineName = "vllm"
"""The split where no engine is named (``verify --pp``, a plan without ``--engine``): vLLM's."""


def stage_sizes(n_layers: int, pp: int, split: EngineName = DEFAULT_SPLIT) -> list[int]:
    """Layers of each of ``pp`` stages (pp <= n_layers): n_layers // pp each, the n_layers % pp extra ones given as
    the engine ``split`` gives them (none overridden by its environment variable):

    - vLLM: to the stages before the last, the second-to-last first (so the last, which holds the head, keeps the
      fewest): ``vllm/distributed/utils.py``, ``get_pp_indices`` (``partitions[-i] += 1`` for i in 2..r + 1, read at
      commit 5a6541db; ``VLLM_PP_LAYER_PARTITION`` overrides it).
    - SGLang: to the last n_layers % pp stages: ``python/sglang/srt/distributed/utils.py``, ``get_pp_indices``
      ("the last N partitions will have one extra layer", read at commit 1107be11; ``SGLANG_PP_LAYER_PARTITION``
      overrides it).
    - TensorRT-LLM: to the first n_layers % pp stages, ``torch.tensor_split``'s rule: ``tensorrt_llm/mapping.py``,
      ``Mapping.pp_layers`` (the 1.x ``MappingBase``; a ``pp_partition`` given to the mapping overrides it)."""
    base, extra = divmod(n_layers, pp)
    sizes = [base] * pp
    if split == "vllm":
        receivers = range(pp - 2, pp - 2 - extra, -1)
    elif split == "sglang":
        receivers = range(pp - extra, pp)
    else:
        receivers = range(extra)
    for stage in receivers:
        sizes[stage] += 1
    return sizes


MERGED_BLOCK_FAMILIES = ("nemotron_h",)
"""Families whose layers here merge the engines' layers: Nemotron-H's mixer block and the feed-forward block after it
are one layer here (``core.families.models.nemotron_h``), two of the ``num_hidden_layers`` blocks the engines split
into stages (vLLM's ``NemotronHModel`` builds each block a layer, ``make_layers``)."""


def engine_layer_spans(model: ModelSpec) -> list[int] | None:
    """How many of the engine's layers each layer of ``model`` is (Nemotron-H: 2, a mixer and its feed-forward; 1, a
    mixer alone); None where each is one (``MERGED_BLOCK_FAMILIES``)."""
    if model.family not in MERGED_BLOCK_FAMILIES:
        return None
    return [1 if model.mlp_kind(layer) == "none" else 2 for layer in range(model.n_layers)]


def layer_stage_sizes(model: ModelSpec, pp: int, split: EngineName = DEFAULT_SPLIT) -> list[int]:
    """Layers of ``model`` each of ``pp`` stages holds as the engine ``split`` cuts them (``stage_sizes``). Where a
    layer here merges the engine's layers (``engine_layer_spans``), the engine's layers are split and each layer goes
    to the stage of its first (its mixer block): a feed-forward block the engine puts on the next stage is priced on
    its mixer's, at most one a stage boundary. Refused where a stage would hold no mixer block."""
    spans = engine_layer_spans(model)
    if spans is None:
        return stage_sizes(model.n_layers, pp, split)
    ends = list(itertools.accumulate(stage_sizes(sum(spans), pp, split)))
    sizes, first = [0] * pp, 0
    for span in spans:
        sizes[bisect.bisect_right(ends, first)] += 1
        first += span
    if 0 in sizes:
        raise BadInputError(
            f"pp {pp}: {model.name}'s {sum(spans)} blocks split so that stage {sizes.index(0)} holds only a"
            " feed-forward block, which mha prices with the mixer before it: use fewer stages"
        )
    return sizes


def pp_problem(model: ModelSpec, pp: int) -> str | None:
    """Why ``model`` cannot be split into ``pp`` stages, or None."""
    if pp < 1:
        return f"pp must be at least 1 (got {pp})"
    if pp > model.n_layers:
        return f"pp {pp} exceeds the {model.n_layers} layers of {model.name}: each stage needs at least one layer"
    if model.layers.n_kv_shared_layers is not None and pp > 1:
        return (
            f"{model.name}'s last {model.layers.n_kv_shared_layers} layers reuse earlier layers' K/V (Gemma-3n, Gemma"
            " 4): a stage boundary between a layer and the one reading its cache is not priced: run it with pp 1"
        )
    if model.embeddings.per_layer_inputs is not None and pp > 1:  # review 376 #3
        return (
            f"{model.name}'s per-layer embeddings (Gemma 4) are not split into pipeline stages here (vLLM 0.34 builds"
            " the whole table and its projection on every stage and sends the per-layer inputs along): run it with"
            " pp 1"
        )
    return None


def stage_layout(model: ModelSpec, pp: int, stage: int, split: EngineName = DEFAULT_SPLIT) -> StageLayout:
    """Stage ``stage`` (0-based) of ``pp`` as the engine ``split`` cuts the layers (``stage_sizes``; vLLM's where no
    engine is named); raises ``BadInputError`` when pp does not split the model."""
    problem = pp_problem(model, pp)
    if problem is not None:
        raise BadInputError(problem)
    if not 0 <= stage < pp:
        raise BadInputError(f"stage {stage} is not one of the {pp} stages")
    sizes = layer_stage_sizes(model, pp, split)
    return StageLayout(
        stage=stage, pp=pp, first_layer=sum(sizes[:stage]), n_layers=sizes[stage], embedding=stage == 0,
        head=stage == pp - 1, model_layers=model.n_layers, model_attention_free=model.attention_free,
    )  # fmt: skip


def stage_layouts(model: ModelSpec, pp: int, split: EngineName = DEFAULT_SPLIT) -> list[StageLayout]:
    """Every stage of ``pp`` (``stage_layout``), first to last."""
    return [stage_layout(model, pp, s, split) for s in range(pp)]


def layers_model(model: ModelSpec, first: int, n_layers: int) -> ModelSpec:
    """Layers [first, first + n_layers) of ``model`` as a model of their own: layer i is the original's layer
    first + i (its attention kind and whether its MLP is dense, MoE or none); embedding and head as the original's."""
    block: dict[str, object] = {}
    if first > 0 and not model.block.first_input_norm:  # only the model's own first layer lacks its input norm
        block["first_input_norm"] = True
    moe = model.block.moe
    if moe is not None:
        dense = max(0, min(n_layers, moe.n_dense_layers - first))  # the original's dense layers lead
        offset = (moe.layer_offset - first) % moe.layer_period  # the period, counted from ``first``
        block["moe"] = moe.model_copy(update={"n_dense_layers": dense, "layer_offset": offset})
    layers: dict[str, object] = {}
    if model.layers.pattern:
        layers["pattern"] = [model.layer_kind(first + i) for i in range(n_layers)]
    if model.layers.mlp_pattern:
        layers["mlp_pattern"] = [model.mlp_kind(first + i) for i in range(n_layers)]
    return model.model_copy(
        update={
            "n_layers": n_layers,
            "layers": model.layers.model_copy(update=layers),
            "block": model.block.model_copy(update=block),
        }
    )


def first_moe_layer(model: ModelSpec) -> int:
    """The first layer with an MoE MLP (0 without MoE, or none among the layers)."""
    return next((i for i in range(model.n_layers) if model.is_moe_layer(i)), 0)


def stage_model(model: ModelSpec, layout: StageLayout) -> ModelSpec:
    """The layers ``layout`` holds, as a model (``layers_model``)."""
    return layers_model(model, layout.first_layer, layout.n_layers)


def stage_params(model: ModelSpec, layout: StageLayout, tp: int = 1) -> int:
    """Weights one tensor-parallel rank of stage ``layout`` holds: its share of the stage's layers, of the embedding
    on the first stage, of the final norm and head on the last (a tied head counted again on a last stage that is
    not also the first); the vocabulary padded as the torch decoder builds it (``built_vocab_padding``)."""
    stage = stage_model(model, layout)
    groups = tensor_groups(stage, tp, vocab_padding=built_vocab_padding(tp))
    inputs, outputs = groups[0], groups[-1]
    held = sum(group_params(group, tp) * len(group.places) for group in groups[1:-1])
    if layout.embedding:  # the tables, BERT's token types, an embedding norm and projection
        held += group_params(inputs)
    if layout.head:  # the final norm, the untied head and its bias, BERT's head transform
        held += group_params(outputs)
        if model.embeddings.tied and not layout.embedding:  # the tied head's copy of the embedding
            held += next(t.numel for t in inputs.tensors if t.kind == "embedding")
    return held


def stage_sides(model: ModelSpec, layout: StageLayout) -> "Sides":
    """What stage ``layout`` holds outside its layers (``core.weight_bytes.Sides``): the embedding on the first, the
    final norm and head on the last, a tied head's copy of the embedding on a last stage that is not the first."""
    from mha_cli.core.weight_bytes import Sides

    tied_copy = model.embeddings.tied and layout.head and not layout.embedding
    return Sides(embedding=layout.embedding, head=layout.head, tied_copy=tied_copy)


class StageMemory(Record):
    """One pipeline stage's memory on one of its devices: what it holds and what its KV pool admits."""

    stage: int
    first_layer: int
    n_layers: int
    embedding: bool
    """It holds the token embedding (the first stage)."""
    head: bool
    """It holds the final norm and LM head (the last stage)."""
    weight_bytes_per_device: int
    kv_tokens_per_device: int
    """Tokens its KV pool holds (each of its layers' cache)."""
    admitted_per_replica: int
    """Requests of the plan's context its pool admits at once."""

    def limiting_key(self) -> tuple[int, int, int]:
        """The order the stage that limits a replica is picked in (the least first): fewest requests admitted, then
        fewest KV tokens, then most weights."""
        return self.admitted_per_replica, self.kv_tokens_per_device, -self.weight_bytes_per_device

    def describe(self) -> str:
        """``stage 1 (layers 63-125, final norm and LM head)``."""
        held = [what for what, on in (("embedding", self.embedding), ("final norm and LM head", self.head)) if on]
        last = self.first_layer + self.n_layers - 1
        return f"stage {self.stage} (layers {self.first_layer}-{last}" + "".join(f", {part}" for part in held) + ")"
