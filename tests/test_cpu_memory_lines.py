"""``--target cpu``'s memory plan names this machine's memory as it was read (``/proc/meminfo``), not as torch's
total on a GPU with a datasheet, and charges no CUDA context."""

import pytest


def test_the_cpu_plan_names_proc_meminfo_not_torch_or_a_datasheet(cli):
    engine = cli.json("kv", "llama-3-8b", "--target", "cpu", "--seq", "8k")["memory"]["engine"]
    lines = {line["label"]: line for line in engine["budget"]}
    device = lines["total device memory"]["how"]
    assert "/proc/meminfo" in device and "torch" not in device and "public measurement" not in device
    non_torch = lines["non-torch memory"]
    assert non_torch["bytes"] == 0 and "CUDA context, cuBLAS" not in non_torch["how"]
    table = cli.run("kv", "llama-3-8b", "--target", "cpu", "--seq", "8k").stdout
    assert "/proc/meminfo" in table and "datasheet" not in table and "as torch reports it" not in table


def test_a_gpu_plan_keeps_torch_total_and_the_datasheet(cli):
    table = cli.run("kv", "llama-3-8b", "--target", "h100", "--seq", "8k").stdout
    assert "device memory as torch reports it (79.19 GiB of the datasheet's 80 GB" in table


def test_the_datasheet_gb_is_binary_as_the_torch_totals_show(cli):
    """A datasheet's memory GB are 2^30 B: torch sees more of an HBM part than a decimal reading holds (an H100's
    79.19 GiB is 85.0 x 10^9 B, an A100 80GB's 79.14, an MI300X's 191.98 GiB of 192), never more than the binary one."""
    from mha_cli.core.targets import load_targets

    targets = load_targets()
    for target_id in ("h100-sxm", "a100-80gb", "h200", "mi300x", "rtx-4090"):
        target = targets[target_id]
        assert target.memory_gb * 10**9 < target.device_memory_bytes <= target.memory_bytes, target_id
    assert targets["h100-sxm"].memory_bytes == 80 * 2**30
    plan = cli.json("kv", "llama-3-8b", "--target", "h100", "--seq", "8k")["memory"]
    assert plan["vendor_memory_bytes"] == 80 * 2**30
    table = " ".join(cli.run("kv", "llama-3-8b", "--target", "h100", "--seq", "8k").stdout.split())
    assert "80 GB: DRAM is sized in binary GB, 80 x 2^30 B)" in table and "10^9" not in table


@pytest.mark.parametrize(
    ("target", "binary"),
    [("h100", True), ("h200", True), ("b200", True), ("gb300", True), ("mi300x", True), ("b300", False), ("l4", False)],
)
def test_the_caption_says_binary_gb_only_where_torch_shows_it(cli, target, binary):
    """The caption says the datasheet's GB are binary only where torch sees more than a decimal reading holds
    (core.targets.gb_shown_binary): a B300's 267.69 GiB is 287.4 x 10^9 B, under its 288 GB (hardware_targets.csv's
    torch figure, device_total_bytes 287,428,771,840), so '288 x 2^30 B' would have 20 GiB vanish; an L4's torch
    total is under 24 x 10^9 B too. Only the torch and datasheet figures are said there."""
    from mha_cli.core.targets import gb_shown_binary, resolve_target

    device = resolve_target(target).target
    assert gb_shown_binary(device.memory_gb, device.device_memory_bytes) is binary
    table = " ".join(cli.run("kv", "llama-3-8b", "--target", target, "--seq", "8k").stdout.split())
    gb = f"{device.memory_gb:g}"
    seen = f"device memory as torch reports it ({device.torch_memory_gib:.2f} GiB of the datasheet's {gb} GB"
    said = f"{seen}: DRAM is sized in binary GB, {gb} x 2^30 B); GiB = 2^30 B" if binary else f"{seen}); GiB = 2^30 B"
    assert said in table
    assert ("binary GB" in table) is binary


@pytest.mark.parametrize(
    ("target", "vendor_bytes"),
    [
        ("h100", 80 * 2**30),  # 85,899,345,920 B: torch's 85.03 x 10^9 B shows the GB binary
        ("b300", 288 * 10**9),  # was 288 x 2^30 = 309,237,645,312 B, 20 GiB more than anything shows
        ("l4", 24 * 10**9),  # torch's total is under 24 x 10^9 B too
    ],
)
def test_the_datasheet_bytes_read_the_gb_as_the_caption_does(cli, target, vendor_bytes):
    """``vendor_memory_bytes`` reads the datasheet's GB as binary only where the caption says so
    (``core.targets.datasheet_bytes`` on ``gb_shown_binary``), else as 10^9 B; the GB themselves as stated."""
    plan = cli.json("kv", "llama-3-8b", "--target", target, "--seq", "8k")["memory"]
    assert plan["vendor_memory_bytes"] == vendor_bytes
    assert plan["vendor_memory_gb"] == {"h100": 80, "b300": 288, "l4": 24}[target]
