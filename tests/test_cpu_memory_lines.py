"""``--target cpu``'s memory plan names this machine's memory as it was read (``/proc/meminfo``), not as torch's
total on a GPU with a datasheet, and charges no CUDA context."""


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
