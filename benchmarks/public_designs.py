"""How close `mha recommend` lands to public designs: ask it for each design's budget, compare the shapes.

Run: `python benchmarks/public_designs.py` (prints one row per design and the hit rates; `--json` for the
numbers). The designs and their sources are in tests/fixtures/public_designs.yaml; the tolerance bands are
the issue's: head_dim equal, KV heads within 2x, width within 25%, depth within 35%, total (and, for MoE,
active) parameters within 5%. For an MLA design the KV check compares the values cached per token per layer
(the latent) within 2x, and head_dim compares the per-head value width. tests/test_recommend_public.py drives it.

Hit rates over the 34 designs (27 dense, 7 MoE), measured with this script:

    check     before   after      (before: the recommender of commit 2769b0e, same requests, no MoE options)
    head_dim  27/34    27/34
    kv_heads  25/34    28/34
    width     21/34    31/34
    depth     24/34    31/34
    total     34/34    34/34
    active     0/7      7/7
    all       14/34    18/34

Then 41 designs (Gemma 3 1B-27B, MobileLLM-125M/350M and OLMoE-1B-7B added, Gemma 2's windows restated) and a
windows check (a dense design with a local:global pattern, asked under --priority inference: the same ratio and a
window within 2x):

    check     before   after      (before: commit 52b6821; after: MHA028's windows, MHA012's small-model
    head_dim  31/41    31/41       shape, MHA007's expert counts that expert parallelism divides)
    kv_heads  33/41    36/41      (SmolLM2-135M, MobileLLM-125M: 576 x 30 with 9 / 3 heads; Qwen2.5-0.5B)
    width     38/41    38/41
    depth     37/41    38/41      (OLMoE-1B-7B)
    total     41/41    41/41
    active     8/8      8/8
    windows    0/7      4/7      (Gemma 3 1B-27B hit; Gemma 2's 8K context is below MHA028's 32K)
    all       19/41    24/41

Then 48 designs (seven MoE designs of 2025 added: ERNIE-4.5-21B-A3B, GLM-4.7-Flash, MiniMax-M2, GLM-4.5-Air,
Llama-4-Scout, GLM-4.7, Kimi-K2):

    check     before   after      (before: commit e45c72d; after: MHA008's sparse-MoE shape, query heads 2 x
    head_dim  37/48    37/48       d_model and depth 1.8 x the dense designs' from 8x sparsity; MHA007's
    kv_heads  41/48    39/48       counts expert parallelism divides, fine-grained widths first)
    width     41/48    46/48      (Qwen3-30B-A3B: 3072 x 30 -> 2048 x 44, 32/8 heads, 128 experts)
    depth     40/48    43/48
    total     48/48    48/48
    active    15/15    15/15
    windows    4/7      4/7
    all       25/48    27/48

The 1.8 is the median over the nine sparse designs of this fixture, so the MoE rows are in-sample: they show the
rule describes the designs it was read from, not that it predicts new ones. KV heads lose two: with twice the query
heads, MHA020's group of at most 8 gives 16 KV heads where Qwen3-235B-A22B uses 4 (group 16).

What still misses, and why: Gemma 2/3 (head_dim 256) and gpt-oss (head_dim 64 at 2880) use head widths the
rules do not choose; MHA designs (OLMo-2, SmolLM2-1.7B) and Qwen2.5's 2 KV heads sit outside 2x of the
balanced GQA; MLA designs are asked without --variant MLA and get GQA; Qwen3-MoE goes deeper and narrower than dense
designs of its active size.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mha_cli.core.errors import MhaError  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402
from mha_cli.core.quantities import parse_param_count  # noqa: E402
from mha_cli.core.recommend import RecommendRequest, recommend  # noqa: E402
from mha_cli.core.schemas import ModelSpec  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "public_designs.yaml"
BANDS = {"width": 0.25, "depth": 0.35, "params": 0.05, "kv": 2.0}
ONE_GPU_WEIGHT_BYTES = 60e9
"""Designs whose bf16 weights exceed this are asked for on 8xh100, the rest on one h100."""
CHECKS = ("head_dim", "kv_heads", "width", "depth", "total", "active", "windows")


@dataclass(frozen=True)
class PublicDesign:
    name: str
    source: str
    context: int
    published_total: int
    published_active: int | None
    spec: ModelSpec
    card_rounding: float | None = None
    """How far the model card's round figures (21B, A3B) may sit from the count, when its name rounds more than
    the usual 1.5% (total) and 10% (active)."""

    @property
    def is_moe(self) -> bool:
        return self.spec.block.moe is not None


def load_designs(path: Path = FIXTURE) -> list[PublicDesign]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    designs = []
    for row in data["designs"]:
        active = row.get("published_active")
        designs.append(
            PublicDesign(
                name=row["name"],
                source=row["source"],
                context=row["context"],
                published_total=parse_param_count(str(row["published_total"])),
                published_active=parse_param_count(str(active)) if active is not None else None,
                spec=ModelSpec.model_validate({"name": row["name"], "source": row["source"], **row["spec"]}),
                card_rounding=row.get("card_rounding"),
            )
        )
    return designs


def request_for(design: PublicDesign) -> dict:
    """The options a user would give for this design's budget: total (and active) params, its context, a target,
    and its tokenizer's vocabulary (a tokenizer choice, not an architecture decision, and a large share of a small
    model's budget)."""
    params = count_params(design.spec)
    target = "h100" if 2 * params.total <= ONE_GPU_WEIGHT_BYTES else "8xh100"
    fields: dict = {
        "params": params.total,
        "seq_len": design.context,
        "target": target,
        "vocab_size": design.spec.embeddings.vocab_size,
    }
    if design.is_moe and "active_params" in RecommendRequest.model_fields:
        fields.update(active_params=params.active)
    return fields


@dataclass(frozen=True)
class Row:
    name: str
    moe: bool
    asked: str
    public: str
    got: str
    hits: dict[str, bool | None]
    error: str = ""


def _shape(d_model: int, n_layers: int, heads: str, head_dim: int) -> str:
    return f"{d_model}x{n_layers} {heads} hd{head_dim}"


def compare(design: PublicDesign) -> Row:
    spec = design.spec
    mine = count_params(spec)
    fields = request_for(design)
    asked = f"{mine.total / 1e9:.2f}B" + (f"/A{mine.active / 1e9:.2f}B" if "active_params" in fields else "")
    asked += f" {design.context // 1024}K {fields['target']}"
    public_heads = (
        f"MLA{spec.attention.mla.latent_dim}"
        if spec.attention.mla
        else f"{spec.attention.n_heads}/{spec.attention.n_kv_heads}"
    )
    public_hd = spec.attention.mla.v_head_dim if spec.attention.mla else spec.attention.head_dim
    public = _shape(spec.d_model, spec.n_layers, public_heads, public_hd)
    try:
        result = recommend(RecommendRequest.parse(**fields))
    except MhaError as exc:
        return Row(design.name, design.is_moe, asked, public, "refused", dict.fromkeys(CHECKS, False), exc.message)
    got_model = result.config.model
    got_heads = (
        f"MLA{got_model.attention.mla.latent_dim}"
        if got_model.attention.mla
        else f"{got_model.attention.n_heads}/{got_model.attention.n_kv_heads}"
    )
    got_hd = got_model.attention.mla.v_head_dim if got_model.attention.mla else got_model.attention.head_dim
    got = _shape(got_model.d_model, got_model.n_layers, got_heads, got_hd)
    if got_model.block.moe is not None:
        got += f" E{got_model.block.moe.n_experts}k{got_model.block.moe.n_active_experts}"
    public_kv = (
        spec.attention.mla.latent_dim if spec.attention.mla else 2 * spec.attention.n_kv_heads * spec.attention.head_dim
    )
    got_kv = (
        got_model.attention.mla.latent_dim
        if got_model.attention.mla
        else 2 * got_model.attention.n_kv_heads * got_model.attention.head_dim
    )
    got_params = count_params(got_model)
    hits: dict[str, bool | None] = {
        "head_dim": got_hd == public_hd,
        "kv_heads": (
            1 / BANDS["kv"] <= got_kv / public_kv <= BANDS["kv"]
            if spec.attention.mla or got_model.attention.mla
            else 1 / BANDS["kv"] <= got_model.attention.n_kv_heads / spec.attention.n_kv_heads <= BANDS["kv"]
        ),
        "width": abs(got_model.d_model - spec.d_model) <= BANDS["width"] * spec.d_model,
        "depth": abs(got_model.n_layers - spec.n_layers) <= BANDS["depth"] * spec.n_layers,
        "total": abs(got_params.total - mine.total) <= BANDS["params"] * mine.total,
        "active": abs(got_params.active - mine.active) <= BANDS["params"] * mine.active if design.is_moe else None,
    }
    hits["windows"] = windows_hit(design, fields)
    return Row(design.name, design.is_moe, asked, public, got, hits)


def _pattern(spec: ModelSpec) -> tuple[int, int] | None:
    """(local, global) layers of a window pattern's period, None when every layer is global."""
    if spec.layers.sliding_window is None or not spec.layers.pattern:
        return None
    return spec.layers.pattern.count("local"), spec.layers.pattern.count("global")


def windows_hit(design: PublicDesign, fields: dict) -> bool | None:
    """For a dense design with a local:global pattern (None for the others): asked for its budget under
    --priority inference (the goal windows serve), does the recommendation have the same local:global ratio with a
    window within 2x of the design's?"""
    spec = design.spec
    if design.is_moe or _pattern(spec) is None:
        return None
    try:
        got = recommend(RecommendRequest.parse(**fields, priority="inference")).config.model
    except MhaError:
        return False
    if _pattern(got) is None or got.layers.sliding_window is None or spec.layers.sliding_window is None:
        return False
    (lo, gl), (got_lo, got_gl) = _pattern(spec), _pattern(got)
    same_ratio = lo * got_gl == got_lo * gl
    return same_ratio and 1 / BANDS["kv"] <= got.layers.sliding_window / spec.layers.sliding_window <= BANDS["kv"]


def hit_rates(rows: list[Row]) -> dict[str, tuple[int, int]]:
    """(hits, designs the check applies to) per check, and for all checks together."""
    rates = {}
    for check in CHECKS:
        applied = [row.hits[check] for row in rows if row.hits[check] is not None]
        rates[check] = (sum(bool(h) for h in applied), len(applied))
    rates["all"] = (sum(all(h is not False for h in row.hits.values()) for row in rows), len(rows))
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [compare(design) for design in load_designs()]
    rates = hit_rates(rows)
    if args.json:
        print(json.dumps({"rows": [asdict(row) for row in rows], "hit_rates": rates}, indent=2))
        return 0
    print(f"{'design':<17} {'asked':<24} {'public':<24} {'recommended':<32} misses")
    for row in rows:
        misses = ",".join(c for c, h in row.hits.items() if h is False) or "-"
        print(f"{row.name:<17} {row.asked:<24} {row.public:<24} {row.got:<32} {misses} {row.error[:60]}")
    print()
    for check, (hits, n) in rates.items():
        print(f"{check:<9} {hits:>3}/{n:<3} {hits / n:6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
