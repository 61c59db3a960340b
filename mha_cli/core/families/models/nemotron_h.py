"""Nemotron-H: a stack of blocks, each one mixer (Mamba-2 or attention) or one feed-forward (MLP or MoE), in the
order ``layers_block_type`` (older configs: ``hybrid_override_pattern``, M * - E) lists.

Priced as the layers of its mixers, each with the feed-forward block that follows it: a mixer block and the
feed-forward after it are one pre-norm layer (x + mixer(norm(x)), then h + ffn(norm(h))), the same weights and the
same arithmetic; a mixer block another mixer block follows is a layer without an MLP (``ModelSpec.mlp_pattern``
``none``: Nemotron-3-Nano's Mamba-2 block before each attention block). An attention block holds K/V, a Mamba-2
block its fixed state (in ``mamba_ssm_cache_dtype``; vLLM's float32 when the config leaves it out), a feed-forward
block nothing. Its experts and MLPs are plain (up, down) with squared ReLU; its router DeepSeek-V3's sigmoid with a
correction bias.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.state_readers import STATE_DTYPE_FIELDS, mamba2_state

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

MIXERS = {"linear_attention": "linear_attention", "full_attention": "full_attention"}
"""Blocks that mix tokens (and keep a cache): Mamba-2 and attention."""
BLOCKS = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
"""``hybrid_override_pattern``'s letters (NemotronHConfig)."""
DEFAULT_BLOCKS = ["linear_attention", "moe", "full_attention", "mlp"]
"""NemotronHConfig's blocks when a config lists none."""
MAMBA_FIELDS = {
    "mamba_n_heads": "mamba_num_heads", "mamba_d_head": "mamba_head_dim", "mamba_d_state": "ssm_state_size",
    "mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel", "mamba_conv_bias": "use_conv_bias",
}  # fmt: skip
"""The Mamba-2 fields the shared reader reads, and Nemotron-H's own names for them."""
DEFAULTS = {"mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4}
CLASS_DEFAULTS = {
    "mamba_expand": 2, "n_shared_experts": 1, "moe_intermediate_size": 7688, "shared_expert_intermediate_size": 7688,
    "num_experts_per_tok": 2,
}  # fmt: skip
"""NemotronHConfig's defaults for the fields the standard readers read (the shared expert's width under the name
the view gives it)."""


LEGACY_BLOCKS = {"mamba": "linear_attention", "attention": "full_attention"}
"""``layers_block_type`` names of configs written before transformers 5, which its ``remap_legacy_layer_types``
(configuration_utils.py, 5.25) maps to today's (trial 348 #6: refused here while transformers built the same model)."""


def _blocks(config: dict[str, Any], origin: str) -> list[str]:
    blocks = config.get("layers_block_type")
    if blocks is None and config.get("hybrid_override_pattern") is not None:
        pattern = config["hybrid_override_pattern"]
        if not isinstance(pattern, str) or set(pattern) - set(BLOCKS):
            raise BadInputError(f"{origin}: hybrid_override_pattern must be a string of M, *, - and E, got {pattern!r}")
        blocks = [BLOCKS[c] for c in pattern]
        layers = config.get("num_hidden_layers")
        if type(layers) is int and layers != len(pattern):
            raise BadInputError(
                f"{origin}: hybrid_override_pattern lists {len(pattern)} blocks but num_hidden_layers is {layers};"
                " vLLM's NemotronHConfig refuses such a config (it asserts the two are equal) and transformers 5"
                " would take the pattern's count, so mha does not guess: make them agree"
            )
    if blocks is None:
        layers = config.get("num_hidden_layers")
        if type(layers) is int and layers != len(DEFAULT_BLOCKS):
            raise BadInputError(
                f"{origin}: Nemotron-H lists no layers_block_type or hybrid_override_pattern but num_hidden_layers is"
                f" {layers}: transformers builds its {len(DEFAULT_BLOCKS)}-block default and vLLM's NemotronHConfig"
                " a default pattern of its own, so mha does not guess: give the pattern"
            )
        blocks = DEFAULT_BLOCKS
    if isinstance(blocks, list):  # the names before transformers 5 (mamba, attention), as its config remaps them
        blocks = [LEGACY_BLOCKS.get(block, block) if isinstance(block, str) else block for block in blocks]
        pattern = config.get("hybrid_override_pattern")
        if isinstance(pattern, str) and not set(pattern) - set(BLOCKS) and [BLOCKS[c] for c in pattern] != blocks:
            raise BadInputError(  # review 349 #5: the list was taken silently over a pattern saying otherwise
                f"{origin}: layers_block_type and hybrid_override_pattern list different blocks; transformers takes"
                " the list (with a warning) and vLLM before its own remap the pattern, so mha does not guess: keep one"
            )
    if not isinstance(blocks, list) or set(map(str, blocks)) - set(BLOCKS.values()):
        raise BadInputError(f"{origin}: layers_block_type must list {', '.join(sorted(BLOCKS.values()))} blocks")
    return blocks


FEED_FORWARDS = {"mlp": "dense", "moe": "sparse"}
"""Feed-forward blocks as ``mlp_layer_types`` names what a layer has (``none``: no feed-forward block follows)."""


def _paired(blocks: list[str], origin: str) -> tuple[list[str], list[str]]:
    """(each mixer block, the feed-forward block after it as ``mlp_layer_types`` names it, ``none`` if none)."""
    mixers: list[str] = []
    feed_forwards: list[str] = []
    for i, block in enumerate(blocks):
        if block in MIXERS:
            mixers.append(block)
            feed_forwards.append("none")
        elif not mixers or feed_forwards[-1] != "none":
            raise BadInputError(
                f"{origin}: Nemotron-H's block {i} ({block}) follows no mixer block of its own: mha prices each"
                " feed-forward block with the Mamba-2 or attention block before it, so this pattern is refused"
            )
        else:
            feed_forwards[-1] = FEED_FORWARDS[block]
    if not mixers:
        raise BadInputError(f"{origin}: Nemotron-H's layers_block_type lists no Mamba-2 or attention block")
    return mixers, feed_forwards


def mixer_layers(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """The config with its mixer blocks as the layers (``num_hidden_layers``, ``layers_block_type``), the block after
    each as its feed-forward (``mlp_layer_types``), its Mamba-2 fields and shared expert's width under the standard
    readers' names, and no sliding window (its attention blocks attend to every token)."""
    mixers, feed_forwards = _paired(_blocks(config, origin), origin)
    if "sparse" in feed_forwards and config.get("n_routed_experts") is None:
        raise BadInputError(f"{origin}: Nemotron-H's blocks include MoE blocks but n_routed_experts is not set")
    view = {k: v for k, v in config.items() if k not in ("hybrid_override_pattern", "sliding_window")}
    view |= {"num_hidden_layers": len(mixers), "layers_block_type": mixers, "mlp_layer_types": feed_forwards}
    for ours, theirs in MAMBA_FIELDS.items():
        value = config.get(theirs, DEFAULTS.get(theirs))
        if value is not None:
            view[ours] = value
    if config.get("moe_shared_expert_intermediate_size") is not None:
        view["shared_expert_intermediate_size"] = config["moe_shared_expert_intermediate_size"]
    return view


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Mamba-2 of mamba_num_heads x mamba_head_dim channels (not expand x hidden_size); its recurrent state in
    float32 when the config states no ``mamba_ssm_cache_dtype`` (the NemotronHConfig default, and what vLLM's
    ``NemotronHForCausalLMConfig`` then uses; a stated one is read by ``core.hf_import``)."""
    inner = r.count("mamba_n_heads", "mamba_n_heads") * r.count("mamba_d_head", "mamba_d_head")
    state = {**mamba2_state(r, d_model, inner=inner, out_proj="mamba_proj_bias"), "on_attention_layers": False}
    if not any(r.config.get(field) is not None for field in STATE_DTYPE_FIELDS):
        state["state_dtype"] = r.assume("fp32", "mamba_ssm_cache_dtype absent: float32, Nemotron-H's default in vLLM")
    return state


def _read_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its MLPs' ``mlp_bias`` gives the dense MLP and the shared expert biases (its routed experts have none): the
    shared expert's are not counted here, so a biased MoE model is refused."""
    if fields.get("mlp_bias") and fields.get("moe") is not None:
        raise BadInputError(
            f"{r.origin}: Nemotron-H with mlp_bias true biases its shared experts, which mha does not count: refused"
        )


def _layers_note(written: Mapping[str, Any], viewed: Mapping[str, Any]) -> str | None:
    """The line saying how the config's blocks became the layers shown (trial 375 #4: "2688 x 29" where the config
    says 52), or None where the view kept the count."""
    mixers, feed_forwards = viewed["layers_block_type"], viewed["mlp_layer_types"]
    blocks = len(mixers) + sum(kind != "none" for kind in feed_forwards)
    if blocks == len(mixers):
        return None
    counts = {kind: feed_forwards.count(kind) for kind in ("sparse", "dense") if kind in feed_forwards}
    after = " and ".join(f"{n} {'MoE' if kind == 'sparse' else 'MLP'}" for kind, n in counts.items())
    return (
        f"layers: the config's {blocks} blocks read as {len(mixers)} layers, each a Mamba-2 or attention block"
        f" ({mixers.count('linear_attention')} Mamba-2, {mixers.count('full_attention')} attention) with the"
        f" feed-forward block after it where one follows ({after}); the weights and the cache are the blocks'"
    )


FAMILY = Family(
    model_types=("nemotron_h",),
    config_class="NemotronHConfig (transformers 5.24)",
    defaults=CLASS_DEFAULTS,
    spellings={"activation": ("mlp_hidden_act",)},
    layout={"mlp": "plain", "nope_layers": "global"},  # plain MLPs and experts (up, down); attention without RoPE
    config_view=mixer_layers,
    view_note=_layers_note,
    fixed_state="Mamba-2",
    state=_state,
    read_fields=_read_fields,
    routing_defaults={"scoring_func": "sigmoid", "topk_method": "noaux_tc"},
    routing_fixed=("scoring_func", "topk_method"),  # NemotronHTopkRouter: DeepSeek-V3's choice, whatever the config
    names=("nemotron-h", "nemotron_h"),
    unbuilt="MLP-only and MoE-only",
    differences=(
        "Nemotron-H's blocks (one mixer or one MLP/MoE each, one norm each) are built as mixer + MLP layers, the same"
        " weights and arithmetic under other names: its checkpoints do not load by name",
    ),
    equal_test=(
        "tests/test_hybrid_families.py::test_nemotron_h_gives_transformers_logits_with_each_feed_forward_block_after"
        "_its_mixer (whole decoder, its weights renamed block by block)"
    ),
    left_unread={
        **dict.fromkeys(MAMBA_FIELDS.values(), ANY_VALUE),  # read under the shared reader's names (the view)
        **dict.fromkeys(("moe_shared_expert_intermediate_size", "moe_shared_expert_overlap"), ANY_VALUE),
        **dict.fromkeys(
            ("use_mamba_kernels", "chunk_size", "residual_in_fp32", "rescale_prenorm_residual", "mamba_hidden_act"),
            ANY_VALUE,
        ),
        **dict.fromkeys(
            (
                "time_step_min",
                "time_step_max",
                "time_step_floor",
                "expand",
                "num_nextn_predict_layers",
                "mtp_layers_block_type",
            ),
            ANY_VALUE,
        ),
        "time_step_limit": [0.0, float("inf")],
        "use_bias": False,
        "moe_latent_size": None,
    },
)
