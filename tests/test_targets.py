import csv

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.targets import load_targets, resolve_target
from tests.conftest import REPO

TODAYS_GPUS = [
    "l20", "l40", "h20", "h800", "b300", "gb300", "rtx-5080", "rtx-a4000", "rtx-a5000", "rtx-2000-ada", "rtx-4000-ada",
    "rtx-5000-ada", "rtx-pro-6000-srv", "rtx-pro-6000-ws", "gb10", "mi355x",
    "mi350x",
]  # fmt: skip
FIGURES = ("memory_gb", "memory_bandwidth_gbs", "bf16_tflops_dense", "fp8_tflops_dense", "interconnect_gbs")


def test_every_row_of_the_reference_table_is_shipped_with_its_source():
    targets = load_targets()
    reference = REPO.parent / "shared" / "reference" / "hardware_targets.csv"
    if reference.exists():  # the sourced table this data was taken from: its rows, in its order, figures unchanged
        with reference.open() as handle:
            rows = list(csv.DictReader(handle))
        assert [row["id"] for row in rows] == [t for t in targets if t not in TODAYS_GPUS]
        for row in rows:
            shipped = targets[row["id"]].model_dump()
            assert all(shipped[f] == (float(row[f]) if row[f] else None) for f in FIGURES), row["id"]
    assert len(targets) == 35 + len(TODAYS_GPUS)
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


def test_unknown_target_lists_spellings_of_the_same_chip_only():
    with pytest.raises(BadInputError, match=r"unknown target 'H100 SXM'.*did you mean h100-sxm\?"):
        resolve_target("H100 SXM")
    with pytest.raises(BadInputError, match=r"unknown target 'h1000': none is close"):  # not h100: another chip
        resolve_target("h1000")


def test_uncertain_rows_are_flagged():
    targets = load_targets()
    assert targets["a10g"].uncertain
    assert not targets["h100-sxm"].uncertain


def test_the_json_carries_the_marks_the_table_shows(cli):
    """Trial 340 #5: the table's ``!`` and ``~`` were in no JSON field; each row now says both, as the table does."""
    rows = {row["id"]: row for row in cli.json("targets")["targets"]}
    table = cli.run("targets").stdout
    assert "a10g !" in table and rows["a10g"]["uncertain"] is True and rows["h100-sxm"]["uncertain"] is False
    estimated = [tid for tid, row in rows.items() if not row["device_memory_measured"]]
    assert estimated and all(rows[tid]["torch_memory_source"].startswith("estimate") for tid in estimated)
    assert all(f"{tid} ~" in table or f"{tid} ! ~" in table for tid in estimated)
    assert rows["h100-sxm"]["device_memory_measured"] is True
    one = cli.json("targets", "8xa10g")
    assert one["resolved"]["target"]["uncertain"] is True and one["targets"][0]["uncertain"] is True


@pytest.mark.parametrize(
    ("target_id", "memory_gb", "bandwidth_gbs", "bf16", "fp8", "fp4", "interconnect_gbs"),
    [
        # HGX B300 (8 GPUs): BF16 36 PF, FP8 72 PF sparse; FP4 108 PF dense; 2.3 TB; NVLink5 1.8 TB/s per GPU
        ("b300", 288, 8000, 36000 / 8 / 2, 72000 / 8 / 2, 108000 / 8, 1800),
        # GB300 NVL72: BF16 360 PF and FP8 720 PF sparse, FP4 1,080 PF dense, 576 TB/s, over 72 GPUs
        ("gb300", 279, 576000 / 72, 360000 / 72 / 2, 720000 / 72 / 2, 1080000 / 72, 1800),
        # AMD MI355X: 256 CUs x 2.4 GHz x 8,192 FP8 FLOPs per CU per clock; BF16 half, MXFP4 double; 7 x 153.6 GB/s
        ("mi355x", 288, 8000, 256 * 2.4e9 * 8192 / 2 / 1e12, 256 * 2.4e9 * 8192 / 1e12, 256 * 2.4e9 * 8192 * 2 / 1e12,
         7 * 153.6),
        # AMD MI350X: the same chip air-cooled at 2.2 GHz (Hot Chips 2025); AMD rounds to 2.3 / 4.6 / 9.2 PF
        ("mi350x", 288, 8000, 256 * 2.2e9 * 8192 / 2 / 1e12, 256 * 2.2e9 * 8192 / 1e12, 256 * 2.2e9 * 8192 * 2 / 1e12,
         7 * 153.6),
        ("h20", 96, 4000, 148, 296, None, 900),
        ("h800", 80, 3350, 989.4, 1978.9, None, 400),  # the H100 SXM's tensor rates, NVLink cut to 400 GB/s
        ("l40", 48, 864, 181, 362, None, None),
        # RTX PRO 6000 Blackwell: 4,000 AI TOPS FP4 sparse; BF16 with FP32 accumulate = 4 x the 125 TFLOPS FP32
        ("rtx-pro-6000-ws", 96, 1792, 4 * 125, 4000 / 4, 4000 / 2, None),
        # Ada pro cards: datasheet "tensor performance" is FP8 sparse
        ("rtx-2000-ada", 16, 224, 47.98, 191.9 / 2, None, None),
        ("rtx-5000-ada", 32, 576, 261.1, 1044.4 / 2, None, None),
        # Ampere pro cards: datasheet tensor is BF16/FP16 sparse, no fp8
        ("rtx-a4000", 16, 448, 153.4 / 2, None, None, None),
        ("rtx-a5000", 24, 768, 222.2 / 2, None, None, 112.5),
        # GeForce RTX 5080: 1,801 AI TOPS FP4 sparse; FP8 a quarter of dense FP4 (FP32 accumulate), BF16 an eighth
        ("rtx-5080", 16, 960, 112.6, 225.1, 1801 / 2, None),
        # DGX Spark's GB10: 1 PFLOP FP4 sparse; FP8 and BF16 unpublished, derived as a half and a quarter of dense FP4
        ("gb10", 128, 273, 1000 / 2 / 4, 1000 / 2 / 2, 1000 / 2, None),
    ],
)  # fmt: skip
def test_todays_gpus_carry_their_datasheet_figures(
    target_id, memory_gb, bandwidth_gbs, bf16, fp8, fp4, interconnect_gbs
):
    t = load_targets()[target_id]
    expected = {"memory_gb": memory_gb, "memory_bandwidth_gbs": bandwidth_gbs, "bf16_tflops_dense": bf16,
                "fp8_tflops_dense": fp8, "fp4_tflops_dense": fp4, "interconnect_gbs": interconnect_gbs}  # fmt: skip
    for field, want in expected.items():  # datasheets round to 0.1 TFLOP/s
        got = getattr(t, field)
        assert got is None if want is None else got == pytest.approx(want, abs=0.1), (target_id, field, got, want)


def test_every_new_gpu_says_where_its_figures_come_from_and_flags_derived_compute():
    targets = load_targets()
    for target_id in TODAYS_GPUS:
        t = targets[target_id]
        assert t.source and t.notes and t.torch_memory_source, target_id
        assert t.fp8_native == (t.fp8_tflops_dense is not None), target_id
        assert t.fp4_tflops_dense is None or t.fp4_tflops_dense > (t.fp8_tflops_dense or 0), target_id
    # no vendor datasheet (h20, l20), or a figure derived from another part's (b300's fp4, the 5080, the server card)
    uncertain = {"h20", "l20", "b300", "rtx-5080", "rtx-pro-6000-srv", "gb10"}
    assert {t.id for t in targets.values() if t.uncertain} >= uncertain
    assert not targets["l40"].uncertain and not targets["mi355x"].uncertain
    # fp4 only on chips that have it: Blackwell and CDNA4
    fp4 = {"b200", "gb200", "b300", "gb300", "rtx-5090", "rtx-5080", "rtx-pro-6000-srv", "rtx-pro-6000-ws", "gb10"}
    fp4 |= {"mi355x", "mi350x"}
    assert {t.id for t in targets.values() if t.fp4_tflops_dense} == fp4


@pytest.mark.parametrize(
    ("spec", "target_id", "count"),
    [("8xb300", "b300", 8), ("4 x MI355X", "mi355x", 4), ("2xh20", "h20", 2), ("5080", "rtx-5080", 1),
     ("a4000", "rtx-a4000", 1), ("4000-ada", "rtx-4000-ada", 1), ("mi355", "mi355x", 1), ("mi350", "mi350x", 1),
     ("72xgb300", "gb300", 72)],
)  # fmt: skip
def test_todays_gpus_resolve_with_aliases_and_device_counts(spec, target_id, count):
    resolved = resolve_target(spec)
    assert (resolved.target.id, resolved.n_devices) == (target_id, count)


@pytest.mark.parametrize(
    ("target_id", "gib", "nvidia_smi_mib"),
    # was 285.12 (b300) and 276.21 (gb300): estimates at 99% of the vendor's GB, some 17 GiB over what a B300 gives
    [("b300", 267.69, 275040), ("gb300", 276.50, 284208)],
)
def test_blackwell_ultra_torch_totals_are_measured_and_trail_nvidia_smi(target_id, gib, nvidia_smi_mib):
    """torch's total (``torch.cuda.mem_get_info``) as read on real parts, a little under what nvidia-smi lists for the
    same part, as for H100 (81559 MiB, 79.19 GiB) and B200 (183359 MiB, 178.35 GiB)."""
    target = load_targets()[target_id]
    assert target.torch_memory_gib == gib and target.device_memory_measured
    assert 0.4 < nvidia_smi_mib / 1024 - gib < 1.2


def test_rtx_pro_6000_torch_total_is_the_measured_94_97_gib():
    """audit5: was 95.13 GiB, an estimate (nvidia-smi's 97887 MiB less the H100's 0.46 GiB), though vLLM 0.12.0 on a
    Server Edition prints 'Free memory on device (93.47/94.97 GiB)' (engine log 2502) and torch's OOM messages on
    sm_120 96 GB cards read 94.97 GiB. The Workstation Edition carries the same figure, still marked an estimate."""
    targets = load_targets()
    server, workstation = targets["rtx-pro-6000-srv"], targets["rtx-pro-6000-ws"]
    assert server.torch_memory_gib == workstation.torch_memory_gib == 94.97
    assert server.device_memory_measured and not workstation.device_memory_measured
    assert 0.4 < 97887 / 1024 - server.torch_memory_gib < 1.2  # trails nvidia-smi as H100, B200, B300 do


@pytest.mark.parametrize(
    ("spec", "same_as"),
    [("b200x8", "8xb200"), ("h20x8", "8xh20"), ("H100 x 8", "8xh100"), ("8h100", "8xh100"), ("mi300x8", "8xmi300x"),
     ("gb300nvl72", "72xgb300"), ("GB200-NVL72", "72xgb200"), ("GB300 NVL72", "72xgb300"), ("2xgb300nvl72", "2x72xgb300")],
)  # fmt: skip
def test_a_count_after_or_glued_to_a_chip_reads_as_its_x_form(spec, same_as):
    """A count after the chip (``b200x8``), glued in front (``8h100``), or the NVL72 rack a GB200/GB300 row is one
    GPU of (NVIDIA GB300 NVL72: 72 GPUs in one NVLink domain) resolves as the ``NxCHIP`` form does; h20 stays h20."""
    resolved, expected = resolve_target(spec), resolve_target(same_as)
    assert (resolved.target.id, resolved.n_devices, resolved.node_size) == (
        expected.target.id, expected.n_devices, expected.node_size
    )  # fmt: skip
    assert resolved.alias_note is not None and f"({expected.n_devices} x " in resolved.alias_note


@pytest.mark.parametrize(
    ("spec", "offered"),
    [("h2008", "8xh200"), ("h1008", "8xh100"), ("b200-8", "8xb200"), ("h100-16", "16xh100"), ("b200-72", "72xb200"),
     ("tpu-v5e-8", "8xtpu-v5e")],
)  # fmt: skip
def test_digits_glued_to_a_chip_name_are_refused_naming_each_x_spelling(spec, offered):
    """``h2008`` is not read as one chip, ``h1000`` is no H100: digits glued to a model number are never read, only
    spelled back as counts, of one node or whole nodes (h100-16, review 305 #4). ``h2008`` is no eight H20s: a count
    does not begin with 0 (an H20 is another chip: 4 TB/s and 148 TFLOPS against the H200's 4.8 and 989). A v5e slice
    counts chips (review 305 #3)."""
    with pytest.raises(BadInputError, match=rf"unknown target '{spec}': .*did you mean {offered}\?$"):
        resolve_target(spec)


@pytest.mark.parametrize("spec", ["gaudi1", "8xgaudi1", "h20-141", "a10080", "tpu-v5p-8", "tpu-v4-8"])
def test_digits_that_are_no_count_of_that_chip_are_not_offered_as_one(spec):
    """Trial 304 #1, #6: ``gaudi1`` was offered ``1xgaudi`` (Gaudi 3: the alias leaves out the chip's own number),
    ``h20-141`` 141 H20s (no whole nodes) and ``a10080`` 80 A100s (the A100's 80 GB), ``tpu-v5p-8`` 8 v5p chips (a
    slice of 8 TensorCores is 4 chips). Each is refused without a count to copy."""
    with pytest.raises(BadInputError, match=r"none is close: run `mha targets` for the list$"):
        resolve_target(spec)


@pytest.mark.parametrize("spec", ["b200x0", "0b200", "b200x5000", "gb300nvl0", "4090x0"])
def test_a_glued_count_out_of_range_is_refused_as_a_count(spec):
    """``b200x0`` is a count of B200s, as ``0xb200`` is: refused as one, not as an unknown target."""
    with pytest.raises(BadInputError, match=rf"^device count in '{spec}' must be between 1 and 4,096$"):
        resolve_target(spec)


@pytest.mark.parametrize("spec", ["gb300nvl144", "GB200-NVL144", "gb300nvl73"])
def test_an_nvl_rack_larger_than_the_parts_nvlink_domain_is_refused_naming_the_x_form(spec):
    """``gb300nvl144`` promises 144 GPUs in one NVLink domain; a GB300's holds 72 (GB300 NVL72), so it is refused with
    the spelling of as many GPUs over racks, which resolves; NVL72 and a smaller NVL36 still read."""
    count = int(spec.lower().rsplit("nvl", 1)[1])
    chip = spec.lower()[:5]
    with pytest.raises(BadInputError, match=rf"holds 72 GPUs \(NVL72\); .* write {count}x{chip}$"):
        resolve_target(spec)
    assert resolve_target(f"{count}x{chip}").n_devices == count
    assert resolve_target(f"{chip}nvl36").n_devices == 36


def test_a_front_count_out_of_range_gets_the_same_message():
    with pytest.raises(BadInputError, match=r"^device count in '0xb200' must be between 1 and 4,096$"):
        resolve_target("0xb200")


def test_the_cli_plans_a_glued_rack_and_refuses_glued_digits_in_one_line(cli):
    shown = cli.json("kv", "llama-3.1-8b", "--target", "gb300nvl72", "--tp", "8")
    assert shown["memory"]["target_id"] == "gb300" and shown["memory"]["n_devices"] == 72
    refused = cli.run("kv", "llama-3.1-8b", "--target", "h2008")
    assert refused.exit_code == 2 and refused.stdout == "" and len(refused.stderr.strip().splitlines()) == 1
    assert refused.stderr.endswith("did you mean 8xh200?\n")


@pytest.mark.parametrize(("spec", "same_as"), [("4090x2", "2x4090"), ("4090 x 2", "2x4090"), ("5090*4", "4x5090")])
def test_a_count_after_a_chip_whose_alias_is_all_digits_reads_as_its_x_form(spec, same_as):
    """``4090x2`` is two RTX 4090s, as ``b200x8`` is eight B200s; the front-count reading (4,090 devices of a
    target ``2``) names no chip, so it was refused as "unknown target '2'", a name the user never typed."""
    resolved, expected = resolve_target(spec), resolve_target(same_as)
    assert (resolved.target.id, resolved.n_devices) == (expected.target.id, expected.n_devices)
    assert resolved.alias_note is not None and f"({expected.n_devices} x " in resolved.alias_note


def test_the_json_names_the_default_link_between_nodes(cli):
    """`mha targets 2x8xh100` printed "joined by InfiniBand NDR" while its JSON said inter_node_link null (trial 260
    #5): the JSON names the link the plans use, the part's reference network card."""
    resolved = cli.json("targets", "2x8xh100")["resolved"]
    assert resolved["inter_node_link"] == "ib-ndr"
    assert "joined by InfiniBand NDR" in cli.run("targets", "2x8xh100").stdout
    assert cli.json("targets", "8xh100")["resolved"]["inter_node_link"] is None  # one node: no link between nodes


def test_a_counted_target_says_its_count_before_the_one_devices_figures(cli):
    """Trial 307 #8: `mha targets 8xb300` began "id: b300", its count only after every per-GPU field."""
    assert cli.run("targets", "8xb300").stdout.startswith("8 x b300: one device's figures, then the 8's\nid: b300\n")
    assert cli.run("targets", "b300").stdout.startswith("id: b300\n")


def test_a_count_s_totals_are_grouped_in_thousands(cli):
    """Trial 406 #13: `targets 16xh100` printed "1280 GB, 53600 GB/s", every other figure of the tool grouped."""
    printed = cli.run("targets", "16xh100").stdout
    assert "16 devices: 1,280 GB, 53,600 GB/s, 15,830.4 dense bf16 TFLOP/s in all" in " ".join(printed.split())


def test_a_large_count_s_totals_stay_out_of_exponents(cli):
    """Review 409 #4: 128 B200s' bandwidth printed "1.024e+06 GB/s"."""
    printed = " ".join(cli.run("targets", "16x8xb200").stdout.split())
    assert "128 devices: 23,040 GB, 1,024,000 GB/s, 288,000.0 dense bf16 TFLOP/s in all" in printed
