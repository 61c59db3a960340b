import csv

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.targets import load_targets, resolve_target
from tests.conftest import REPO


def test_every_row_of_the_reference_table_is_shipped_with_its_source():
    targets = load_targets()
    reference = REPO.parent / "shared" / "reference" / "hardware_targets.csv"
    if reference.exists():  # the sourced table this data was taken from
        with reference.open() as handle:
            assert [row["id"] for row in csv.DictReader(handle)] == list(targets)
    assert len(targets) == 35
    assert all(t.source and t.memory_gb > 0 and t.memory_bandwidth_gbs > 0 for t in targets.values())
    h100 = targets["h100-sxm"]
    assert (h100.memory_gb, h100.memory_bandwidth_gbs, h100.bf16_tflops_dense) == (80, 3350, 989.4)


@pytest.mark.parametrize(
    ("spec", "target_id", "count"),
    [("a100", "a100-80gb", 1), ("h100", "h100-sxm", 1), ("4090", "rtx-4090", 1), ("8xh100", "h100-sxm", 8),
     ("2 x A100-40GB", "a100-40gb", 2), ("H200", "h200", 1), ("mi300", "mi300x", 1)],
)  # fmt: skip
def test_aliases_and_device_counts(spec, target_id, count):
    resolved = resolve_target(spec)
    assert (resolved.target.id, resolved.n_devices) == (target_id, count)


def test_alias_expansion_is_reported():
    assert resolve_target("a100").alias_note == "a100 -> a100-80gb (NVIDIA A100 80GB SXM4)"
    assert resolve_target("a100-80gb").alias_note is None


def test_unknown_target_lists_close_matches():
    with pytest.raises(BadInputError, match=r"unknown target 'h1000'.*did you mean.*h100"):
        resolve_target("h1000")


def test_uncertain_rows_are_flagged():
    targets = load_targets()
    assert targets["a10g"].uncertain
    assert not targets["h100-sxm"].uncertain
