"""``mha families``: every family the importer knows has a row, and each row agrees with what the code does."""

from __future__ import annotations

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import KNOWN_MODEL_TYPES
from mha_cli.core.presets import get_preset
from mha_cli.verify.plan import refuse_unbuilt_layers


def test_every_known_family_has_a_row_and_the_claims_are_consistent(cli):
    rows = {row["model_type"]: row for row in cli.json("families")["families"]}
    assert set(rows) == KNOWN_MODEL_TYPES
    for row in rows.values():
        whole = row["equal_to_transformers"] and "block" not in row["equal_to_transformers"]
        # a decoder equal to transformers lists no difference (DeepSeek-V3's MTP module: transformers has none either)
        assert not (whole and [d for d in row["differences"] if "multi-token" not in d]), row
    assert rows["llama"]["verify"] == "yes" and rows["llama"]["differences"] == []
    assert rows["gpt2"]["differences"] and rows["gemma2"]["differences"]  # learned positions, soft caps
    assert rows["jamba"]["priced"] == "KV + state (Mamba); weights approximate" and rows["jamba"]["verify"].startswith(
        "refused"
    )


@pytest.mark.parametrize(
    ("preset", "model_type"),
    [("llama-3-8b", "llama"), ("jamba-mini-1.5", "jamba"), ("llama-4-scout", "llama4"), ("gemma-3-27b", "gemma3"),
     ("qwen3-next-80b-a3b", "qwen3_next"), ("deepseek-v3.2-exp", "deepseek_v32"), ("falcon-h1-7b", "falcon_h1")],
)  # fmt: skip
def test_the_verify_column_is_what_verify_does(cli, preset, model_type):
    row = next(r for r in cli.json("families")["families"] if r["model_type"] == model_type)
    try:
        refuse_unbuilt_layers(get_preset(preset))
        refused = False
    except BadInputError:
        refused = True
    assert row["verify"].startswith("refused") is refused


def test_the_table_reads_in_80_columns(cli, monkeypatch):
    from mha_cli.cli import output

    monkeypatch.setenv("COLUMNS", "80")  # the console is rebuilt to read it (another test may have built it wider)
    output.stdout_console.cache_clear()
    out = cli.run("families").stdout
    output.stdout_console.cache_clear()
    assert "none listed is not proof of equality" in " ".join(out.split())
    assert max(len(line) for line in out.splitlines()) <= 80
