"""The weight inventory (``core.inventory.model_tensors``) against the torch decoder it describes.

The contract: for every preset, every Hugging Face fixture and every family of the installed transformers (its
tiny config, as the family sweeps build it), at tp 1, 2 and 4 and every rank, the model ``build_model`` builds on
the meta device holds exactly the tensors the inventory lists for that rank: the same names, the same shapes, the
parameters as parameters and the saved buffers as buffers. Where torch does not build a split (a fixed-state mixer,
a q/k norm over the whole projection, projected embeddings over tp > 1), the test says which and requires the
refusal. A control drops one tensor from the inventory and must fail.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import warnings
from pathlib import Path

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.inventory import Tensor, model_tensors
from mha_cli.core.presets import get_preset, preset_names
from mha_cli.core.schemas import ModelSpec

torch = pytest.importorskip("torch")
from mha_cli.nn.model import build_model  # noqa: E402
from tests.benchmark_modules import load_benchmark  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURES = sorted((REPO / "tests" / "fixtures" / "hf_configs").glob("*.json"))
TPS = (1, 2, 4)


def _fixture_spec(path: Path) -> ModelSpec:
    return import_hf_config(json.loads(path.read_text()), name=path.stem).model


def built_tensors(spec: ModelSpec, tp: int, rank: int) -> dict[str, tuple[tuple[int, ...], bool]] | None:
    """name -> (shape, is a buffer) of what ``build_model`` builds for the rank; None where it refuses the split."""
    try:
        model = build_model(spec, device="meta", tp_rank=rank, tp_size=tp)
    except ValueError:
        if tp == 1:
            raise
        return None
    params = {name: (tuple(p.shape), False) for name, p in model.named_parameters()}
    saved = model.state_dict()
    buffers = {name: (tuple(b.shape), True) for name, b in model.named_buffers() if name in saved}
    return params | buffers


def listed(tensors: list[Tensor]) -> dict[str, tuple[tuple[int, ...], bool]]:
    return {t.name: (t.shape, t.buffer) for t in tensors}


def mismatch(built: dict, inventory: dict) -> str:
    """'' when equal, else what differs (a few names of each kind)."""
    missing, extra = sorted(set(built) - set(inventory)), sorted(set(inventory) - set(built))
    different = sorted(n for n in set(built) & set(inventory) if built[n] != inventory[n])
    parts = [f"{what}: {names[:3]}" for what, names in
             (("not listed", missing), ("not built", extra), ("differ", different)) if names]  # fmt: skip
    return "; ".join(parts)


def check_contract(spec: ModelSpec, every_rank: bool = True) -> list[str]:
    """Every (tp, rank) where the inventory and the built model differ, with what differs; tp > 1 splits that torch
    refuses are skipped when the split's refusal is one torch documents (a mixer, a whole-projection q/k norm,
    projected embeddings). ``every_rank`` false: the first and the last rank of each tp (the layout gives every rank
    the same shapes; the ranks between repeat them)."""
    problems = []
    for tp in TPS:
        for rank in range(tp) if every_rank else sorted({0, tp - 1}):
            try:  # the torch decoder builds no vision tower (tests/test_vision_tower.py checks it against transformers)
                inventory = listed([t for t in model_tensors(spec, tp, rank) if t.kind != "vision"])
            except BadInputError:
                inventory = None
            built = built_tensors(spec, tp, rank)
            if inventory is None or built is None:
                if inventory is not None and not _torch_builds_only_one_rank(spec):
                    problems.append(f"tp {tp}: torch refuses a split the inventory lists")
                if inventory is None and built is not None:
                    problems.append(f"tp {tp}: the inventory refuses a split torch builds")
                break
            difference = mismatch(built, inventory)
            if difference:
                problems.append(f"tp {tp} rank {rank}: {difference}")
    return problems


def _torch_builds_only_one_rank(spec: ModelSpec) -> bool:
    """The splits ``build_model`` leaves to one rank: fixed-state mixers, a q/k norm over the whole projection,
    embeddings narrower than d_model."""
    whole_norm = spec.attention.qk_norm and spec.attention.qk_norm_span == "projection"
    return spec.recurrent is not None or whole_norm or spec.embeddings.width is not None


def first_layers(spec: ModelSpec, n: int = 12) -> ModelSpec:
    """The spec's first ``n`` layers (every layer kind, dense and MoE layer of the presets appears by then)."""
    return spec.model_copy(update={"n_layers": min(spec.n_layers, n)})


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_builds_what_the_inventory_lists(name):
    from mha_cli.nn.model import gemma4_layout_unbuilt

    if gemma4_layout_unbuilt(get_preset(name)):  # Gemma-3n's per-layer embeddings (trial 392 #1): not built
        pytest.skip("per-layer embeddings are not built: tests/test_zoo_weights.py checks its weights")
    assert check_contract(first_layers(get_preset(name))) == []


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_hf_fixture_builds_what_the_inventory_lists(path):
    from mha_cli.nn.mixers.build import BUILT_KINDS

    spec = _fixture_spec(path)
    if spec.recurrent is not None and spec.recurrent.kind not in BUILT_KINDS:  # xLSTM, RWKV: priced, not built
        pytest.skip(f"{spec.recurrent.kind} has no torch mixer: tests/test_attention_free.py checks its weights")
    from mha_cli.nn.model import gemma4_layout_unbuilt

    if gemma4_layout_unbuilt(spec) and not spec.attention.per_kind_geometry:  # Gemma-3n's per-layer embeddings
        pytest.skip("per-layer embeddings are not built: tests/test_zoo_weights.py checks its weights")
    if spec.attention.per_kind_geometry:  # Gemma 4: build_model builds one head geometry, so refuses it
        pytest.skip(
            "Gemma 4's per-kind heads are not built: tests/test_gemma4_moe.py and tests/test_gemma4_per_layer.py check"
            " its weights against transformers"
        )
    assert check_contract(first_layers(spec)) == []


def _family_sweep():
    return load_benchmark("family_sweep")


def _family_specs() -> dict[str, ModelSpec]:
    """Every family of the installed transformers whose tiny config ``mha`` reads and ``build_model`` builds."""
    pytest.importorskip("transformers")
    sweep, specs = _family_sweep(), {}
    for model_type in sweep.causal_lm_types():
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stderr(io.StringIO()),
            contextlib.redirect_stdout(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            try:
                spec = import_hf_config(sweep._tiny_config(model_type).to_dict(), name=model_type).model
                build_model(spec, device="meta")
            except Exception:  # refused or not built: the family sweeps report those
                continue
        specs[model_type] = spec
    return specs


def test_every_family_builds_what_the_inventory_lists():
    specs = _family_specs()
    assert len(specs) >= 100  # transformers 5 has well over 100 causal-LM families mha builds
    problems = {name: found for name, spec in specs.items() if (found := check_contract(spec, False))}
    assert problems == {}


def test_the_contract_fails_when_one_tensor_is_dropped(monkeypatch):
    """The control: an inventory without gpt-oss's sinks (or any one tensor) must fail the contract."""
    import mha_cli.core.inventory as inventory

    spec = get_preset("gpt-oss-20b").model_copy(update={"n_layers": 2})
    assert check_contract(spec) == []
    real = inventory.model_tensors
    monkeypatch.setattr(
        sys.modules[__name__], "model_tensors", lambda *a, **k: [t for t in real(*a, **k) if "sinks" not in t.name]
    )
    problems = check_contract(spec)
    assert problems and all("not listed" in p and "sinks" in p for p in problems)


def test_splits_follow_the_heads():
    """Spot values written by hand: Llama-3-8B at tp 4 (32 query heads, 8 KV heads, d_ff 14336, vocab 128256)."""
    tensors = {t.name: t for t in model_tensors(get_preset("llama-3-8b"), 4, 3)}
    assert tensors["model.layers.0.self_attn.q_proj.weight"][1:4] == ((1024, 4096), "attention", "column")
    assert tensors["model.layers.0.self_attn.k_proj.weight"][1:4] == ((256, 4096), "attention", "kv_heads")
    assert tensors["model.layers.31.self_attn.o_proj.weight"][1:4] == ((4096, 1024), "attention", "row")
    assert tensors["model.layers.5.mlp.down_proj.weight"].shape == (4096, 3584)
    assert tensors["model.embed_tokens.weight"].shape == (32064, 4096)  # 128256 padded to 64 (already is), / 4
    assert tensors["model.norm.weight"].split == "replicated"
    assert sum(t.numel for t in model_tensors(get_preset("llama-3-8b"))) == 8_030_261_248  # the model card's count


def _all_specs() -> dict[str, ModelSpec]:
    specs = {name: get_preset(name) for name in preset_names()}
    return specs | {f"hf:{path.stem}": _fixture_spec(path) for path in FIXTURES}


def test_the_grouped_inventory_counts_what_the_full_one_lists():
    """``tensor_groups`` (each layer layout once, for counting) sums to ``model_tensors`` kind by kind, at tp 1
    and 2, for every preset and fixture: a layer whose tensors the grouping key misses would break it."""
    from mha_cli.core.inventory import tensor_groups

    for name, spec in _all_specs().items():
        for tp in (1, 2):
            try:
                full = model_tensors(spec, tp)
            except BadInputError:
                continue
            grouped: dict[str, int] = {}
            for group in tensor_groups(spec, tp):
                for t in group.tensors:
                    grouped[t.kind] = grouped.get(t.kind, 0) + t.numel * len(group.places)
            listed_by_kind: dict[str, int] = {}
            for t in full:
                listed_by_kind[t.kind] = listed_by_kind.get(t.kind, 0) + t.numel
            assert grouped == listed_by_kind, (name, tp)


@pytest.mark.parametrize("fmt", ["fp8", "int8", "int4", "gptq-int4", "nf4"])
def test_quantised_weights_weigh_between_their_bits_and_bf16(fmt):
    """Every preset and fixture, tp 1 and 2: a linear-scope format's bytes lie between its nominal bits on every
    weight and bf16 on every weight. Before the inventory, Jamba (MoE every other layer) priced its experts on
    every layer: its int4 weights came to -26.7 GB and its fp8 weights to 15.4 GB of 103 GB in bf16."""
    from mha_cli.core.params import params_per_rank
    from mha_cli.core.weight_bytes import rank_weight_bytes
    from mha_cli.core.weight_formats import weight_format

    bits = weight_format(fmt).nominal_bits
    for name, spec in _all_specs().items():
        for tp in (1, 2):
            try:
                params = params_per_rank(spec, tp)
            except BadInputError:
                continue
            weighed = rank_weight_bytes(spec, tp, fmt)
            if spec.attention_free and weighed == rank_weight_bytes(spec, tp, "bf16"):
                continue  # Mamba: every weight a mixer's, which no named format quantises here (xLSTM's FFN is)
            assert params * bits / 8 * 0.99 < weighed < rank_weight_bytes(spec, tp, "bf16"), (name, tp)
