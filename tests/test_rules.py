"""The rules catalog and engine: stable ids, complete data, and every rule fires in a real scenario."""

import re
from pathlib import Path

import pytest

from mha_cli.core.check import check_design
from mha_cli.core.config_io import config_to_yaml
from mha_cli.core.recommend import RecommendRequest, recommend
from mha_cli.core.rules import RULES, Trace, get_rule
from mha_cli.core.rules.engine import counted
from mha_cli.core.schemas import MhaConfig, ModelSpec

CORE = Path(__file__).resolve().parent.parent / "mha_cli" / "core"


def test_ids_and_names_are_stable_and_unique():
    ids = [rule.id for rule in RULES]
    names = [rule.name for rule in RULES]
    assert all(re.fullmatch(r"MHA\d{3}", i) for i in ids)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names)
    assert len(set(ids)) == len(ids) and len(set(names)) == len(names)


def test_every_rule_has_all_its_fields():
    for rule in RULES:
        for field in ("condition", "action", "rationale", "reference"):
            assert len(getattr(rule, field)) >= 7, (rule.id, field)


def test_the_refusals_are_hard():
    refusals = ("MHA090", "MHA091", "MHA092", "MHA093", "MHA094", "MHA095")
    assert {r.id for r in RULES if r.topic == "refusal"} == set(refusals)
    assert all(get_rule(i).severity == "hard" for i in refusals)


def test_every_rule_is_cited_by_the_code_that_applies_it():
    files = [*sorted((CORE / "recommend").glob("*.py")), CORE / "check.py"]
    code = "".join(path.read_text() for path in files)
    for rule in RULES:
        assert f'"{rule.id}"' in code or f"rule {rule.id}" in code, rule.id


def test_trace_records_values_in_order_and_dedupes_ids():
    trace = Trace()
    trace.fire("MHA010", "head_dim 128", head_dim=128)
    trace.fire("MHA091", "excluded", severity="info", n_heads=64)
    trace.fire("MHA010", "again", head_dim=64)
    assert trace.ids == ["MHA010", "MHA091"]
    assert trace.findings[0].values == {"head_dim": 128}
    assert trace.findings[1].severity == "info" and get_rule("MHA091").severity == "hard"
    assert trace.by_severity("hard") == []
    with pytest.raises(KeyError):
        trace.fire("MHA999", "no such rule")


def test_refire_revises_a_decision_in_place():
    trace = Trace()
    trace.fire("MHA001", "d_model 4096", d_model=4096)
    trace.fire("MHA002", "28 layers: 7.16B", n_layers=28)
    trace.fire("MHA022", "GQA-8 -> MQA")
    trace.refire("MHA002", "28 layers: 6.95B", n_layers=28)
    assert [f.id for f in trace.findings] == ["MHA001", "MHA002", "MHA022"]
    assert trace.findings[1].message == "28 layers: 6.95B"
    trace.refire("MHA040", "not fired before")  # nothing to revise: appended
    assert trace.ids[-1] == "MHA040"


def test_counted_writes_real_plurals():
    assert (counted(0, "warning"), counted(1, "warning"), counted(1234, "sequence")) == (
        "0 warnings", "1 warning", "1,234 sequences",
    )  # fmt: skip
    assert counted(2, "hard-rule violation") == "2 hard-rule violations"


def _rec(**kw):
    kw.setdefault("seq_len", 8192)
    return recommend(RecommendRequest(**kw)).rules_fired


def _config(tmp_path: Path, name: str, **model) -> str:
    fields = dict(d_model=1024, n_layers=8, n_heads=16, vocab_size=1000, d_ff=2816)
    fields.update(model)
    path = tmp_path / f"{name}.yaml"
    path.write_text(config_to_yaml(MhaConfig(model=ModelSpec(**fields))))
    return str(path)


# One real scenario per rule: the rule must fire there (and the tests elsewhere check what it did).
SCENARIOS = {
    "MHA001": lambda tmp: _rec(params=8_000_000_000),
    "MHA002": lambda tmp: _rec(params=8_000_000_000),
    "MHA003": lambda tmp: _rec(params=8_000_000_000),
    "MHA004": lambda tmp: _rec(params=8_000_000_000),
    "MHA005": lambda tmp: _rec(params=8_000_000_000),
    "MHA007": lambda tmp: _rec(params=30_000_000_000, active_params=3_000_000_000),
    "MHA008": lambda tmp: _rec(params=30_000_000_000, active_params=3_000_000_000),
    "MHA012": lambda tmp: _rec(params=125_000_000),
    "MHA027": lambda tmp: _rec(params=8_000_000_000),
    "MHA028": lambda tmp: _rec(params=1_000_000_000, seq_len=65536, priority="inference"),
    "MHA010": lambda tmp: _rec(params=8_000_000_000),
    "MHA011": lambda tmp: _rec(params=8_000_000_000),
    "MHA020": lambda tmp: _rec(params=8_000_000_000),
    "MHA021": lambda tmp: _rec(params=10_000_000, vocab_size=1000),
    "MHA022": lambda tmp: _rec(params=8_000_000_000, target="h100", batch=128, priority="inference"),
    "MHA023": lambda tmp: _rec(params=8_000_000_000, variant="MQA"),
    "MHA024": lambda tmp: _rec(params=125_000_000, target="8xh100"),
    "MHA025": lambda tmp: _rec(params=70_000_000_000, target="h100"),
    "MHA026": lambda tmp: _rec(params=8_000_000_000, target="h100", batch=256),
    "MHA030": lambda tmp: _rec(params=8_000_000_000, variant="MLA"),
    "MHA040": lambda tmp: _rec(params=8_000_000_000),
    "MHA041": lambda tmp: _rec(params=8_000_000_000),
    "MHA042": lambda tmp: _rec(params=1_000_000_000),
    "MHA050": lambda tmp: _rec(params=8_000_000_000),
    "MHA090": lambda tmp: check_design(_config(tmp, "narrow", n_heads=64)).rules_fired,
    "MHA091": lambda tmp: _rec(params=8_000_000_000, seq_len=131072),
    "MHA092": lambda tmp: _rec(params=500_000_000, variant="MLA"),
    "MHA095": lambda tmp: check_design(_config(tmp, "hd65", d_model=1040, n_heads=16)).rules_fired,
    "MHA060": lambda tmp: check_design("llama-2-7b", seq_len="64k").rules_fired,
    "MHA061": lambda tmp: check_design(_config(tmp, "hd96", d_model=1536, n_heads=16)).rules_fired,
    "MHA062": lambda tmp: check_design("llama-3.1-405b").rules_fired,
    "MHA063": lambda tmp: check_design("gpt2").rules_fired,
    "MHA064": lambda tmp: (
        check_design(
            _config(
                tmp, "wide-latent", mla=dict(kv_lora_rank=2048, qk_rope_head_dim=32, qk_nope_head_dim=64, v_head_dim=64)
            )
        ).rules_fired
    ),
}


def test_every_rule_has_a_scenario():
    refusals = {"MHA093", "MHA094"}  # they refuse (exit 2): tested in test_recommend
    assert set(SCENARIOS) | refusals == {rule.id for rule in RULES}


@pytest.mark.parametrize("rule_id", sorted(SCENARIOS))
def test_rule_fires_in_its_scenario(rule_id, tmp_path):
    assert rule_id in SCENARIOS[rule_id](tmp_path)
