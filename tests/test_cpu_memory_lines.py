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
    assert "device memory as torch reports it (79.19 GiB; the datasheet's 80 GB" in table
