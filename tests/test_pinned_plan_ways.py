"""A pinned ``mha plan`` the engine would not start on answers with mha's ways out of the layout, each planned again
and accepted, after the engine's own words. It gave vLLM's advice alone ("Try increasing gpu_memory_utilization"),
which cannot help where the weights already leave nothing at 1.0 (found by newuser trial 229)."""

PINNED = ("plan", "llama-3-8b", "--tp", "1", "--concurrency", "4", "--closed-form")
VLLM_WORDS = "vllm would not start: ValueError: No available memory for the cache blocks."


def test_the_ways_out_follow_vllms_words_and_each_starts(cli):
    refused = cli.run(*PINNED, "--target", "rtx-5080", "--gpu-memory-utilization", "1.0")
    assert refused.exit_code == 2
    line = " ".join(refused.output.split())
    assert VLLM_WORDS.rstrip(".") in line and line.endswith(": use e.g. --target 2xrtx-5080 --tp 2")
    taken = cli.run("plan", "llama-3-8b", "--target", "2xrtx-5080", "--tp", "2", "--concurrency", "4", "--closed-form",
                    "--gpu-memory-utilization", "1.0")  # fmt: skip
    assert taken.exit_code == 0, taken.output


def test_a_way_on_the_target_given_is_offered_once(cli):
    """On 2 GPUs pinned at tp 1, ``--tp 2`` is the way; ``--target 2xrtx-a4000 --tp 2`` (the same change, offered
    beside it before) is not repeated (``memory.layout_changes``)."""
    refused = cli.run(*PINNED, "--target", "2xrtx-a4000")
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and line.endswith(": use e.g. --tp 2")
    assert cli.run("plan", "llama-3-8b", "--target", "2xrtx-a4000", "--tp", "2", "--concurrency", "4",
                   "--closed-form").exit_code == 0  # fmt: skip
