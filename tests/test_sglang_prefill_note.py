"""A plan on an SGLang release whose prefill runs eagerly says so and by how much (``core.cost.serving``'s
``eager_prefill_note``): the reason its TTFT exceeds the same plan on 0.5.10, whose prefill runs in piecewise CUDA
graphs (``core.engine.prefill_graphs``)."""

import re

PLAN = ("plan", "qwen3-8b", "--target", "h100", "--tp", "1", "--closed-form", "--isl", "64")
"""64-token prompts: their step's device work is below 439 operators at NVIDIA's measured 42.7 us each (the default
prompt's was not once the launch time was measured, 2026-12-04; it was at the 80 us fitted on TTFT before)."""


def _eager_notes(result: dict) -> list[str]:
    return [note for note in result["notes"] if note.startswith("prefill runs eagerly")]


def test_the_eager_release_names_its_host_launches_and_the_graphed_one_does_not(cli):
    eager = cli.json(*PLAN, "--engine", "sglang@0.5.3")
    graphed = cli.json(*PLAN, "--engine", "sglang@0.5.10")
    assert eager["ttft_ms"] > graphed["ttft_ms"]
    (note,) = _eager_notes(eager)
    ops, us, floor = re.search(
        r"([\d,]+) operators launched from the host at ([\d.]+) us each.* ([\d.]+) ms", note
    ).groups()
    assert abs(int(ops.replace(",", "")) * float(us) / 1e3 - float(floor)) < 0.1
    assert float(floor) <= eager["ttft_ms"] - eager["front_end_ms"]  # the prompt step is at least the launches
    assert "0.5.10" in note
    assert _eager_notes(graphed) == [] and _eager_notes(cli.json(*PLAN, "--engine", "vllm")) == []


def test_sglang_without_a_release_is_priced_as_the_latest_release_read_and_says_so(cli):
    plain, latest = cli.json(*PLAN, "--engine", "sglang"), cli.json(*PLAN, "--engine", "sglang@0.5.23")
    assert _eager_notes(plain) == [] and plain["ttft_ms"] == latest["ttft_ms"]
    assert plain["ttft_ms"] < cli.json(*PLAN, "--engine", "sglang@0.5.9")["ttft_ms"]
    assert any("breakable CUDA graphs, as SGLang 0.5.23 captures them" in note for note in plain["notes"])


def test_an_amd_gpu_is_told_the_device_turns_the_graphs_off_not_to_type_0_5_10(cli):
    """SGLang 0.5.11 ``_handle_piecewise_cuda_graph``: ``is_hip()`` turns the graphs off whatever the release, so the
    eager note on an MI300X names that and does not send the user to ``--engine sglang@0.5.10`` (eager there too)."""
    amd = cli.json("plan", "qwen3-8b", "--target", "mi300x", "--tp", "1", "--closed-form", "--engine", "sglang@0.5.11")
    (note,) = _eager_notes(amd)
    assert "is_hip()" in note and "(--engine sglang@0.5.10;" not in note
    same_on_0_5_10 = cli.json("plan", "qwen3-8b", "--target", "mi300x", "--tp", "1", "--closed-form", "--engine",
                              "sglang@0.5.10")  # fmt: skip
    assert same_on_0_5_10["ttft_ms"] == amd["ttft_ms"]
