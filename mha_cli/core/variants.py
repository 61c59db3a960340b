"""The same model shape under MHA, GQA, MQA and MLA, for side-by-side KV-cache comparisons."""

from pydantic import ValidationError

from mha_cli.core.kv_heads import balanced_kv_heads
from mha_cli.core.record import Record
from mha_cli.core.rules.catalog import MLA_LATENT_PER_HEAD_DIM, MLA_Q_LATENT_FROM_D_MODEL, MLA_Q_LATENT_PER_KV_LATENT
from mha_cli.core.schemas import ModelSpec, Variant
from mha_cli.core.tensor_parallel import tp_splits_evenly


class VariantOption(Record):
    """One projection choice for a fixed shape."""

    label: str
    variant: Variant
    n_kv_heads: int
    model: ModelSpec
    is_current: bool
    note: str = ""


def _without_mla(model: ModelSpec) -> dict:
    """The model's fields for MHA/GQA/MQA at its shape. For an MLA model the per-head width is
    qk_nope_head_dim (DeepSeek-V2's d_h, against which its paper prices MHA: 2 * n_h * d_h * l)."""
    fields = model.model_dump(exclude={"attention": {"mla", "variant", "n_kv_heads"}})
    mla = model.attention.mla
    fields["attention"]["head_dim"] = mla.qk_nope_head_dim if mla is not None else model.attention.head_dim
    return fields


def _with_attention(fields: dict, **changes: object) -> dict:
    """``fields`` (a dumped spec) with its attention part's ``changes`` set; a change to None leaves it out."""
    attention = {**fields["attention"], **changes}
    return {**fields, "attention": {key: value for key, value in attention.items() if value is not None}}


def gqa_kv_heads_choices(n_heads: int, tp: int = 1) -> list[int]:
    """Divisors of n_heads strictly between 1 and n_heads (the possible GQA KV-head counts) that
    split evenly over ``tp`` ranks (``kv.tp_splits_evenly``: n_kv divisible by tp, or tp by n_kv)."""
    return [k for k in range(2, n_heads) if n_heads % k == 0 and tp_splits_evenly(n_heads, k, tp)]


def default_gqa_kv_heads(n_heads: int, tp: int = 1) -> int | None:
    """The GQA a shape is compared with: rule MHA020's balanced KV-head count (``balanced_kv_heads``: 8, or
    n_heads / 8, counts tp 2/4/8 split: GQA-4 for 28 heads, GQA-16 for 128), the count ``mha recommend`` designs
    with, so that ``mha kv`` and ``mha check`` offer that one (trial 345 #4: GQA-7 was offered for 28 heads);
    ``None`` when no GQA split exists."""
    return balanced_kv_heads(n_heads, tp if tp > 1 else None)


def mla_for_shape(head_dim: int, d_model: int | None = None) -> dict:
    """An MLA block in DeepSeek's proportions: latent 4 x head_dim, RoPE key head_dim / 2,
    and a query latent of 3 x the KV latent when ``d_model`` is at least 4096."""
    block: dict = {
        "kv_lora_rank": MLA_LATENT_PER_HEAD_DIM * head_dim,
        "qk_rope_head_dim": max(head_dim // 2, 1),
        "qk_nope_head_dim": head_dim,
        "v_head_dim": head_dim,
    }
    if d_model is not None and d_model >= MLA_Q_LATENT_FROM_D_MODEL:
        block["q_lora_rank"] = MLA_Q_LATENT_PER_KV_LATENT * block["kv_lora_rank"]
    return block


def variant_options(model: ModelSpec) -> list[VariantOption]:
    """MHA, GQA, MQA and MLA at ``model``'s shape; the model's own choice is marked current. A derived shape that
    no model may have (the schema's bounds) is left out."""
    base = _without_mla(model)
    options: list[VariantOption] = []

    def add(label: str, variant: Variant, model_fields: dict, current: bool, note: str = "") -> None:
        try:
            spec = ModelSpec.model_validate(model_fields)
        except ValidationError:  # a derived shape no model may have (an MLA head over 16,384 wide): left out
            if current:
                raise
            return
        options.append(
            VariantOption(
                label=label,
                variant=variant,
                n_kv_heads=spec.attention.n_kv_heads,
                model=spec,
                is_current=current,
                note=note,
            )
        )

    own_gqa = model.attention.variant == "GQA"
    mla = model.attention.mla
    add(
        "MHA", "MHA", _with_attention(base, n_kv_heads=model.attention.n_heads), model.attention.variant == "MHA",
        "" if mla is None else f"heads of {mla.qk_nope_head_dim}: DeepSeek-V2's d_h (the no-RoPE query width), the"
        f" MHA its paper prices, not the {mla.qk_nope_head_dim + mla.qk_rope_head_dim}-wide MLA query head",
    )  # fmt: skip
    gqa_heads = model.attention.n_kv_heads if own_gqa else default_gqa_kv_heads(model.attention.n_heads)
    if gqa_heads is not None:
        add(
            f"GQA-{gqa_heads}",
            "GQA",
            _with_attention(base, n_kv_heads=gqa_heads),
            own_gqa,
            f"{model.attention.n_heads // gqa_heads} query heads per KV head",
        )
    if model.attention.n_heads > 1:
        add("MQA", "MQA", _with_attention(base, n_kv_heads=1), model.attention.variant == "MQA")
    if mla is not None:
        add(
            "MLA",
            "MLA",
            model.model_dump(),
            True,
            f"latent {mla.kv_lora_rank} + RoPE {mla.qk_rope_head_dim}",
        )
    else:
        shape = mla_for_shape(model.attention.head_dim, model.d_model)
        fields = _with_attention(base, mla=shape, head_dim=None)
        add(
            "MLA",
            "MLA",
            fields,
            False,
            f"hypothetical: latent {shape['kv_lora_rank']} + RoPE {shape['qk_rope_head_dim']} (DeepSeek-V2 proportions)",
        )
    return options
