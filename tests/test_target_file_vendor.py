"""A target file's vendor in any case is the vendor: ``vendor: nvidia`` was priced as an unknown vendor's device (no
CUDA-graph line in the memory plan, another activation peak, 2% more KV tokens than ``vendor: NVIDIA``, and a note
calling "a nvidia device" a sketch), exit 0, though the schema names NVIDIA."""

import pytest
import yaml

from tests.test_target_file import H100


@pytest.mark.parametrize("spelled", ["nvidia", "Nvidia", " NVIDIA "])
def test_a_vendor_in_another_case_prices_as_the_vendor(cli, tmp_path, monkeypatch, spelled):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "upper.yaml").write_text(yaml.safe_dump(H100))
    (tmp_path / "lower.yaml").write_text(yaml.safe_dump(H100 | {"vendor": spelled}))
    args = ("plan", "llama-3.1-8b", "--tp", "1", "--closed-form")
    upper = cli.json(*args, "--target", "upper.yaml")
    lower = cli.json(*args, "--target", "lower.yaml")
    assert lower["memory"]["engine"] == upper["memory"]["engine"] | {
        "notes": [note.replace("upper.yaml", "lower.yaml") for note in upper["memory"]["engine"]["notes"]]
    }
    assert "sketch" not in str(lower)
    assert cli.json("targets", "lower.yaml")["resolved"]["target"]["vendor"] == "NVIDIA"
