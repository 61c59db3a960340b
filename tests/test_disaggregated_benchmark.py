"""``benchmarks/disaggregated.py``'s wide-EP worker rows run as the page launched them: the 4-node prefill's
16,384 tokens a GPU a step is SGLang's --chunked-prefill-size 524,288 over its 32 DP-attention ranks (each rank
gets chunked_prefill_size // dp_size), with the line's --mem-fraction-static 0.85. Before, the script asked for a
16,384-token server chunk (512 a rank) under SGLang's default fraction, whose reserve left nothing of 80 GB: a
BadInputError, and no report."""

from pathlib import Path

from mha_cli.core.safe_yaml import load_yaml_file
from tests.benchmark_modules import load_benchmark

FIXTURE = Path(__file__).parent / "fixtures" / "disaggregated_published.yaml"
ROWS = {row["id"]: row for row in load_yaml_file(FIXTURE)}


def test_the_4k_prefill_worker_steps_four_whole_prompts_a_gpu():
    found = load_benchmark("disaggregated").worker_figures(ROWS["lmsys-large-ep-prefill-4k"])
    assert found["prompts_per_step_per_gpu"] == 16_384 // 4_096  # 4 whole 4,096-token prompts a rank a step


def test_the_decode_worker_runs_at_the_pages_fraction():
    found = load_benchmark("disaggregated").worker_figures(ROWS["lmsys-large-ep-decode-2k"])
    assert found["admitted_per_gpu"] >= 256  # the page's batch of 256 a GPU fits its pool
