"""A pinned ``mha plan`` the engine would not start on answers with mha's ways out of the layout, each planned again
and accepted, after the engine's own words. It gave vLLM's advice alone ("Try increasing gpu_memory_utilization"),
which cannot help where the weights already leave nothing at 1.0 (found by newuser trial 229)."""

import pytest
from pydantic import ValidationError

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


def test_weights_far_over_the_device_are_offered_the_devices_they_need(cli):
    """DeepSeek-V3 (626.92 GiB of weights a rank) on one H100: the one way tried was 2 GPUs, refused too (trial 294
    #4). The fewest devices, a power of two, holding the weights at 80% of each: 627 GiB / (0.8 x 85.0 GB) = 9.9, so
    16, planned again and accepted. Llama-3.1-70B in bf16 (131 GiB): 2.1, so 4 (2 x H100 leave no cache at 0.9).
    Control: a model within twice a device keeps the layouts tried before (the next power of two)."""
    for model, way in (
        ("deepseek-v3", "--target 16xh100-sxm --tp 16"),
        ("llama-3.1-70b", "--target 4xh100-sxm --tp 4"),
    ):
        refused = cli.run("plan", model, "--target", "h100", "--tp", "1", "--closed-form")
        line = " ".join(refused.output.split())
        assert refused.exit_code == 2 and line.endswith(f": use e.g. {way}"), line
    taken = cli.run("plan", "deepseek-v3", "--target", "16xh100", "--tp", "16", "--closed-form")
    assert taken.exit_code == 0, taken.output
    refused = cli.run(*PINNED, "--target", "rtx-5080", "--gpu-memory-utilization", "1.0")
    assert " ".join(refused.output.split()).endswith(": use e.g. --target 2xrtx-5080 --tp 2")


def test_a_search_is_offered_the_devices_the_weights_need_too(cli):
    """Trial 389 #7: unpinned, DeepSeek-V3 on one H100 was told "add GPUs (tp, pp, dp)" with no count (twice the
    devices, the one target tried, starts nothing). The fewest that hold 627 GiB at 80% of each is 16, searched again
    and picked; Qwen3-235B (438 GiB: 8 devices) is offered 8; a model within twice the devices gets twice (Llama-3.1-70B:
    2 x H100, the control)."""
    for model, way in (("deepseek-v3", "--target 16xh100-sxm ("), ("qwen3-235b-a22b-2507", "--target 8xh100-sxm (")):
        refused = cli.run("plan", model, "--target", "h100", "--closed-form")
        line = " ".join(refused.stderr.split())
        assert refused.exit_code == 2 and f"(ways out: {way}" in line and "is picked" in line, line
    line = " ".join(cli.run("plan", "llama-3.1-70b", "--target", "h100", "--closed-form").stderr.split())
    assert "(ways out: --target 2xh100-sxm (" in line


def test_the_devices_the_weights_need_keep_the_target_s_nodes():
    """Review 393 #5: on 2 nodes of 2 L40S, DeepSeek-V3's 32 devices were offered as ``32xl40s`` (mha's own 8-GPU
    nodes); they keep the user's 2 a node (16 of them, 627 GiB at 80% of 44 GiB). One node's count stays a count
    (16 H100s: mha reads 2 nodes of 8)."""
    from mha_cli.core.cost.search import weights_sized_target
    from mha_cli.core.presets import get_preset
    from mha_cli.core.schemas import DeploymentSpec
    from mha_cli.core.targets import resolve_target

    model, deployment = get_preset("deepseek-v3"), DeploymentSpec(weight_dtype="fp8")  # as published
    assert weights_sized_target(model, resolve_target("2x2xl40s"), deployment) == ["--target 16x2xl40s"]
    assert weights_sized_target(model, resolve_target("h100"), deployment) == ["--target 16xh100-sxm"]
    assert weights_sized_target(model, resolve_target("8xh100"), deployment) == []  # twice the target is tried


def test_a_context_that_does_not_fit_is_offered_the_length_that_does(cli):
    """Trial 381 #1: Llama-3.1-8B at its 131,072-token context on one RTX 4090 leaves 4.96 GiB of pool (40,592 tokens
    at 131,072 B a token, whole blocks of 16), 16.00 GiB short of one request. vLLM 0.29+ plans that request against
    the pool less the null block (check_enough_kv_cache_memory, trial 385 #3), so its error names 40,576 tokens; that
    length is the first way out, and planned again it starts; the pool's own 40,592 does not (the control)."""
    args = ("plan", "llama-3.1-8b", "--target", "4090", "--tp", "1", "--closed-form")
    refused = cli.run(*args, "--max-model-len", "131072")
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "the estimated maximum model length is 40576" in line
    assert line.endswith(": use e.g. --max-model-len 40576 or --target 2xrtx-4090 --tp 2"), line
    assert cli.run(*args, "--max-model-len", "40576").exit_code == 0
    assert cli.run(*args, "--max-model-len", "40592").exit_code == 2


def test_max_model_len_auto_is_fitted_to_the_pool_from_vllm_0_14(cli):
    """vLLM 0.14+ reads --max-model-len auto (or -1) as the derived length lowered to the longest one request of which
    fits (``_auto_fit_max_model_len``, on the pool less the null block from 0.29): it starts at 40,576 and logs so,
    where the length typed is refused (above); the plan equals the one of --max-model-len 40576 but for that line and
    note. vLLM 0.13 has no auto-fit (its --max-model-len takes whole numbers): refused, with the way out its check
    names (40,000: its pool, the whole pool checked)."""
    args = ("plan", "llama-3.1-8b", "--target", "4090", "--tp", "1", "--closed-form", "--json")
    fitted = cli.json(*args, "--max-model-len", "-1")
    engine = fitted["memory"]["engine"]
    assert (engine["max_model_len"], engine["kv_tokens"]) == (40576, 40592)
    assert engine["log_lines"][1] == (  # 0.32+'s words (``v1/core/kv_cache_planning.py``)
        "Auto-fit max_model_len: reduced from 131072 to 40576 to fit in available KV cache memory (4.96 GiB GPU)"
    )
    at_0_31 = cli.json(*args, "--max-model-len", "-1", "--engine", "vllm@0.31")["memory"]["engine"]["log_lines"]
    assert "to fit in available GPU memory (" in at_0_31[1] and at_0_31[1].endswith(" GiB available for KV cache)")
    typed = cli.json(*args, "--max-model-len", "40576")
    assert typed["memory"]["engine"]["kv_tokens"] == 40592 and typed["launch"] == fitted["launch"]
    assert "--max-model-len 40576" in fitted["launch"]["vllm"]
    old = cli.run(*args[:-1], "--max-model-len", "auto", "--engine", "vllm@0.13")
    assert old.exit_code == 2 and "length is 40000: use e.g. --max-model-len 40000" in " ".join(old.output.split())


def test_auto_is_fitted_over_every_pipeline_stage(cli):
    """Review 386 #3: under --pp, --max-model-len auto was refused, naming the length. vLLM 0.14+ fits it over every
    stage's worker and takes the shortest (``_auto_fit_max_model_len``, 0.33.0: the least ``worker_max``).
    Llama-3.1-70B over 2 stages of 2 L40S: the last stage (the LM head) fits 74,992 tokens, the first 76,752; the
    replica starts at 74,992 and equals the plan of that length typed, where 75,008 typed is refused."""
    args = ("plan", "llama-3.1-70b", "--target", "4xl40s", "--tp", "2", "--pp", "2", "--closed-form", "--json")
    fitted = cli.json(*args, "--max-model-len", "auto")
    engine = fitted["memory"]["engine"]
    assert engine["max_model_len"] == 74992 and engine["starts"]
    assert engine["log_lines"][1].startswith("Auto-fit max_model_len: reduced from 131072 to 74992 to fit in")
    assert [stage["kv_tokens_per_device"] for stage in fitted["stages"]] == [76768, 75008]
    typed = cli.json(*args, "--max-model-len", "74992")
    assert (typed["launch"], typed["stages"]) == (fitted["launch"], fitted["stages"])
    assert "--max-model-len 74992" in fitted["launch"]["vllm"]
    refused = cli.run(*args[:-1], "--max-model-len", "75008")
    assert refused.exit_code == 2 and "the estimated maximum model length is 74992" in refused.stderr


def test_vllm_0_14_to_0_16_check_a_request_of_the_whole_model_under_stages(cli):
    """Review 391 #1: vLLM 0.14-0.16 check (and auto-fit) one request of the WHOLE model, every stage's layers,
    against the least pool of any worker (``get_kv_cache_configs``' global groups and ``min(available_memory)``);
    0.13 and 0.17 each stage's own. Llama-3.1-70B over 2 stages of 2 L40S, 5.78 GiB a worker: 80 layers x 4 KV heads
    x 128 x 2 x 2 B = 163,840 B a token of the model, so 37,872 tokens (2,367 blocks of 16: 6,204,948,480 B), half
    the 75,744 a stage's own 40 layers hold; 37,888 typed is refused there, and starts on 0.13 (the control)."""
    args = ("plan", "llama-3.1-70b", "--target", "4xl40s", "--tp", "2", "--pp", "2", "--closed-form")
    fitted = cli.json(*args, "--max-model-len", "auto", "--engine", "vllm@0.15", "--json")["memory"]["engine"]
    assert fitted["max_model_len"] == 37872 and fitted["starts"]
    assert any(note.startswith("vLLM 0.14-0.16 checks one request of the whole model (80 layers") for note in
               fitted["notes"])  # fmt: skip
    refused = cli.run(*args, "--max-model-len", "37888", "--engine", "vllm@0.15")
    assert refused.exit_code == 2 and "the estimated maximum model length is 37872" in refused.stderr
    assert cli.run(*args, "--max-model-len", "37888", "--engine", "vllm@0.13").exit_code == 0


def test_dp_attention_is_offered_the_length_that_fits_too(cli):
    """Review 386 #9, 388 #4: under --dp the ways out skipped the length vLLM's error names (15,824 tokens for
    Qwen3-30B-A3B's ranks at utilisation 0.45 on two H100s); it is offered alone, checked with --dp kept (not under
    the layout ways' "leaving out --dp"), and planned again it starts."""
    args = ("plan", "qwen3-30b-a3b", "--target", "2xh100", "--dp", "2", "--tp", "1", "--gpu-memory-utilization",
            "0.45", "--closed-form")  # fmt: skip
    refused = cli.run(*args, "--max-model-len", "40960")
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and line.endswith(": use e.g. --max-model-len 15824"), line  # with --dp kept
    assert cli.run(*args, "--max-model-len", "15824").exit_code == 0


def test_the_auto_fit_flag_is_mhas_own_not_a_file_field():
    """Review 386 #6: ``max_model_len_auto`` appeared in the file schema and stuck where a file set it; it is set by
    ``plan --max-model-len auto`` alone: not in the schema, never written out."""
    from mha_cli.core.schemas import DeploymentSpec

    assert "max_model_len_auto" not in DeploymentSpec.model_json_schema()["properties"]
    assert "max_model_len_auto" not in DeploymentSpec().model_copy(update={"max_model_len_auto": True}).model_dump()
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):  # review 388 #5: a file's is refused
        DeploymentSpec.model_validate({"max_model_len_auto": True})
