"""``mha plan --max-model-len`` longer than --isl + --osl (``core.engine.longer_context``): the engine is sized,
checked and launched at its context, its pool runs the requests of their own length (found by newuser trial 297:
serving at 32,768 and benchmarking 1,024 + 256 was refused)."""

from mha_cli.core.errors import EXIT_BAD_INPUT

PINNED = ["plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--isl", "1024", "--osl", "256",
          "--concurrency", "8", "--closed-form"]  # fmt: skip


def test_a_longer_context_keeps_vllms_pool_and_admits_the_requests_by_their_own_length(cli):
    """vLLM's pool does not depend on max_model_len here (its profiling run is max_num_batched_tokens long), so the
    KV tokens equal the plan at 1,280; what changes is the start-up log's concurrency (requests of 32,768) and the
    launch line. The requests admitted stay those of 1,280 tokens: 435,504 // 1,280 = 340, where 13 of 32,768 fit."""
    short = cli.json(*PINNED)["memory"]["engine"]
    longer = cli.json(*PINNED, "--max-model-len", "32768")
    engine = longer["memory"]["engine"]
    assert engine["kv_tokens"] == short["kv_tokens"] == 435_504
    assert engine["max_model_len"] == 32_768 and short["max_model_len"] == 1_280
    assert engine["admitted_per_replica"] == short["admitted_per_replica"] == 435_504 // 1_280
    assert int(engine["max_concurrency"]) == 435_504 // 32_768 == 13  # "Maximum concurrency for 32,768 tokens"
    assert any("Maximum concurrency for 32,768 tokens per request" in line for line in engine["log_lines"])
    assert (
        "--max-model-len 32768" in longer["launch"]["vllm"] and "--context-length 32768" in longer["launch"]["sglang"]
    )
    assert any("started at max_model_len 32,768" in note for note in engine["notes"])


def test_the_engine_started_longer_is_checked_at_its_context(cli):
    """vLLM refuses to start where its pool holds no request of max_model_len: Llama-3.1-8B on an L4 has 3.52 GiB
    for a cache, 131,072 tokens take 16 GiB (128 KiB a token); the same requests at max_model_len 1,280 start."""
    on_l4 = ["plan", "llama-3.1-8b", "--target", "l4", "--tp", "1", "--concurrency", "8", "--closed-form"]
    refused = cli.run(*on_l4, "--max-model-len", "131072")
    assert refused.exit_code != 0
    assert "To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache" in refused.stderr
    assert cli.run(*on_l4).exit_code == 0


def test_auto_is_the_context_the_engine_derives(cli):
    """vLLM's ``--max-model-len auto`` (and leaving it out on the engine) takes the config's 131,072 for Llama-3.1-8B;
    SGLang's --context-length likewise."""
    vllm = cli.json(*PINNED, "--max-model-len", "auto")
    assert vllm["memory"]["engine"]["max_model_len"] == 131_072 and "--max-model-len 131072" in vllm["launch"]["vllm"]
    sglang = cli.json(*PINNED, "--max-model-len", "-1", "--engine", "sglang")
    assert "--context-length 131072" in sglang["launch"]["sglang"]


def test_sglangs_running_cap_is_its_context_s_and_the_requests_fit_its_tokens(cli):
    """SGLang derives its running cap from the pool's tokens over its context length: at 131,072 it may not exceed
    what the 1,280 plan runs, and what it admits never exceeds its own pool over each request's tokens."""
    short = cli.json(*PINNED, "--engine", "sglang")["memory"]["engine"]
    engine = cli.json(*PINNED, "--engine", "sglang", "--max-model-len", "131072")["memory"]["engine"]
    assert engine["max_model_len"] == 131_072
    assert engine["admitted_per_replica"] <= min(engine["max_num_seqs"], engine["kv_tokens"] // 1_280)
    assert engine["admitted_per_replica"] <= short["admitted_per_replica"]
    assert engine["admitted_per_replica"] > int(engine["max_concurrency"])  # more than requests of 131,072 would


def test_a_context_shorter_than_the_requests_is_refused_in_one_line(cli):
    result = cli.run(*PINNED, "--max-model-len", "1279")
    assert result.exit_code == EXIT_BAD_INPUT and len(result.stderr.splitlines()) == 1
    assert "--max-model-len 1279: the engine refuses requests longer than it, and --isl + --osl is 1,280" in (
        result.stderr
    )


def test_a_config_files_max_model_len_is_refused_not_ignored(cli, tmp_path):
    """Only ``plan --max-model-len`` reads it: in a file, kv and check would price without it, so it is refused."""
    config = tmp_path / "longer.yaml"
    cli_out = cli.run("recommend", "--params", "1B", "--seq", "2048", "--out", str(config))
    assert cli_out.exit_code == 0, cli_out.output
    config.write_text(config.read_text().replace("deployment:\n", "deployment:\n  max_model_len: 32768\n", 1))
    result = cli.run("kv", str(config))
    assert result.exit_code == EXIT_BAD_INPUT and len(result.stderr.splitlines()) == 1
    assert "deployment.max_model_len: an engine started longer than its requests" in result.stderr


def test_the_memory_plan_holds_the_requests_at_their_own_length(cli):
    """The memory JSON agreed with the engine's plan at max_model_len alone: 13 sequences and a headroom of -217 GB
    beside 340 admitted and "fits" (review 298 #2). Its sequences, allocated bytes and headroom are the plan's at
    1,280 tokens now."""
    short = cli.json(*PINNED)["memory"]
    longer = cli.json(*PINNED, "--max-model-len", "32768")["memory"]
    for field in ("max_sequences", "allocated_kv_bytes_per_device", "headroom_bytes", "fits"):
        assert longer[field] == short[field], field
    assert longer["max_sequences"] == 340 and longer["headroom_bytes"] > 0


def test_a_pool_smaller_at_the_longer_context_admits_fewer(cli):
    """vLLM V0 profiles max_model_len tokens (no chunked prefill): at 20,000 on an L4 its pool is 22,096 tokens, 9
    requests of 2,304, where the plan at 2,304 holds 12 (review 298 #1: it said 12 and "fits")."""
    args = ["plan", "llama-3.1-8b", "--target", "l4", "--tp", "1", "--engine", "vllm@0.6.3", "--isl", "2048",
            "--osl", "256", "--concurrency", "12", "--closed-form"]  # fmt: skip
    short = cli.json(*args)["memory"]["engine"]
    engine = cli.json(*args, "--max-model-len", "20000")["memory"]["engine"]
    assert short["admitted_per_replica"] == 12 and short["fits"]
    assert engine["kv_tokens"] == 22_096 < short["kv_tokens"]
    assert engine["admitted_per_replica"] == 9 == 22_096 // 2_304 and not engine["fits"]


def test_a_windowed_models_simulated_pool_is_the_requests_length_s(cli):
    """Gemma 3 (1,024-token windows) with a shared prefix: the simulated scheduler held 40 at max_model_len 32,768
    where the same pool holds 26 at 1,280 (review 298 #3); the runs are the same now."""
    args = ["plan", "gemma-3-27b", "--target", "h100", "--tp", "1", "--shared-prefix", "512", "--concurrency", "40",
            "--num-prompts", "80"]  # fmt: skip
    short = cli.json(*args)["simulated"]
    longer = cli.json(*args, "--max-model-len", "32768")["simulated"]
    for field in ("max_running", "preemptions", "output_tokens_per_s"):
        assert longer[field] == short[field], field


def test_sglang_with_a_pool_under_its_context_serves_shorter_requests(cli):
    """SGLang starts whatever its pool, and aborts only prompts past min(context, pool) - 6 tokens: Gemma 3 27B on an
    H100 holds 30,801 tokens, under a context of 32,768, and serves requests of 1,280 (review 298 #5: refused). A
    context past the model's learned positions stays refused (gpt2: 1,024)."""
    found = cli.json("plan", "gemma-3-27b", "--target", "h100", "--tp", "1", "--engine", "sglang", "--concurrency",
                     "8", "--closed-form", "--max-model-len", "32768")  # fmt: skip
    engine = found["memory"]["engine"]
    assert engine["kv_tokens"] == 30_801 and engine["admitted_per_replica"] > 0
    assert any("SGLang aborts a prompt of 30,795 tokens or more" in note for note in engine["notes"])
    long_prompt = cli.json(
        "plan",
        "gemma-3-27b",
        "--target",
        "h100",
        "--tp",
        "1",
        "--engine",
        "sglang",
        "--isl",
        "30000",
        "--osl",
        "800",
        "--concurrency",
        "1",
        "--closed-form",
        "--max-model-len",
        "32768",
    )
    assert long_prompt["memory"]["engine"]["admitted_per_replica"] == 1  # a prompt under 30,795 (review 301 #4)
    learned = cli.run("plan", "gpt2", "--target", "h100", "--tp", "1", "--isl", "512", "--osl", "256",
                      "--max-model-len", "4096", "--closed-form")  # fmt: skip
    assert learned.exit_code == EXIT_BAD_INPUT and "exceeds the 1,024 learned positions of gpt2" in learned.stderr
