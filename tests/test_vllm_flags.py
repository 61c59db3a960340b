"""vLLM's own flag names and values, pasted from a `vllm serve` line, give the same result as mha's own flags."""

import pytest
import typer

from mha_cli.cli.app import app
from mha_cli.core.errors import EXIT_BAD_INPUT


@pytest.mark.parametrize(
    ("vllm", "native"),
    [
        (["kv", "llama-3-8b", "--target", "2xh100", "--tensor-parallel-size", "2"],
         ["kv", "llama-3-8b", "--target", "2xh100", "--tp", "2"]),
        (["kv", "llama-3-8b", "--kv-cache-dtype", "fp8"], ["kv", "llama-3-8b", "--kv-dtype", "fp8"]),
        (["kv", "llama-3-8b", "--kv-cache-dtype", "fp8_e4m3"], ["kv", "llama-3-8b", "--kv-dtype", "fp8"]),
        (["kv", "llama-3-8b", "--kv-cache-dtype", "auto"], ["kv", "llama-3-8b", "--kv-dtype", "bf16"]),
        (["kv", "llama-3-8b", "--target", "h100", "--quantization", "fp8"],
         ["kv", "llama-3-8b", "--target", "h100", "--weight-dtype", "fp8"]),
        (["kv", "llama-3-8b", "--target", "h100", "--quantization", "awq"],
         ["kv", "llama-3-8b", "--target", "h100", "--weight-dtype", "awq"]),
        (["kv", "llama-3-8b", "--target", "h100", "--quantization", "gptq"],
         ["kv", "llama-3-8b", "--target", "h100", "--weight-dtype", "gptq-int4"]),
        (["kv", "gpt-oss-20b", "--target", "h100", "--quantization", "mxfp4"],
         ["kv", "gpt-oss-20b", "--target", "h100", "--weight-dtype", "mxfp4"]),
        (["kv", "llama-3-8b", "--target", "b200", "--quantization", "modelopt_fp4"],
         ["kv", "llama-3-8b", "--target", "b200", "--weight-dtype", "nvfp4"]),
        # vLLM's human_readable_int: a lowercase suffix is decimal, an uppercase one binary (--seq: both binary)
        (["kv", "llama-3-8b", "--max-model-len", "32K"], ["kv", "llama-3-8b", "--seq", "32768"]),
        (["kv", "llama-3-8b", "--max-model-len", "32k"], ["kv", "llama-3-8b", "--seq", "32000"]),
        (["kv", "llama-3-8b", "--max-model-len", "25.6k"], ["kv", "llama-3-8b", "--seq", "25600"]),
        (["check", "llama-3-8b", "--target", "2xh100", "--tensor-parallel-size", "2", "--kv-cache-dtype", "fp8_e4m3"],
         ["check", "llama-3-8b", "--target", "2xh100", "--tp", "2", "--kv-dtype", "fp8"]),
        (["recommend", "--params", "8B", "--target", "2xh100", "--tensor-parallel-size", "2", "--quantization", "fp8"],
         ["recommend", "--params", "8B", "--target", "2xh100", "--tp", "2", "--weight-dtype", "fp8"]),
        (["plan", "llama-3-8b", "--target", "4xh100", "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2",
          "--kv-cache-dtype", "fp8_e4m3", "--quantization", "fp8", "--closed-form"],
         ["plan", "llama-3-8b", "--target", "4xh100", "--tp", "2", "--pp", "2", "--kv-dtype", "fp8",
          "--weight-dtype", "fp8", "--closed-form"]),
        # the benchmark client's --max-concurrency (and --users, said everywhere; it suggested --seed) are --concurrency
        (["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--max-concurrency", "8", "--closed-form"],
         ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--concurrency", "8", "--closed-form"]),
        (["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--users", "8", "--closed-form"],
         ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--concurrency", "8", "--closed-form"]),
        (["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "2048", "--osl", "512", "--max-model-len",
          "2560", "--closed-form"],
         ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "2048", "--osl", "512", "--closed-form"]),
        (["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "7000", "--osl", "1000", "--max-model-len",
          "8k", "--closed-form"],
         ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "7000", "--osl", "1000", "--closed-form"]),
    ],
    ids=["tp", "kv-fp8", "kv-e4m3", "kv-auto", "q-fp8", "q-awq", "q-gptq", "q-mxfp4", "q-nvfp4", "max-model-len-K",
         "max-model-len-k", "max-model-len-decimal",
         "check", "recommend", "plan", "max-concurrency", "users", "plan-max-model-len", "plan-max-model-len-k"],
)  # fmt: skip
def test_a_vllm_flag_gives_the_same_json_as_the_native_one(cli, vllm, native):
    assert cli.json(*vllm) == cli.json(*native)


def test_e5m2_is_priced_as_fp8_and_keeps_its_encoding(cli):
    """vLLM's fp8_e5m2 is a byte a value as fp8 (e4m3) is: the same figures, its encoding kept on the deployment for
    the launch lines (tests/test_launch_settings.py)."""
    e5m2 = cli.json("kv", "llama-3-8b", "--kv-cache-dtype", "fp8_e5m2")
    fp8 = cli.json("kv", "llama-3-8b", "--kv-dtype", "fp8")
    assert e5m2.pop("deployment") == {**fp8.pop("deployment"), "kv_fp8_variant": "e5m2"}
    assert e5m2 == fp8


def test_an_alias_changes_the_result_as_its_native_flag_does(cli):
    """The control: the aliases are read, not ignored (fp8 halves the cache, tp 2 halves a rank's share)."""
    base = cli.json("kv", "llama-3-8b", "--target", "2xh100", "--tensor-parallel-size", "1")
    assert cli.json("kv", "llama-3-8b", "--kv-cache-dtype", "fp8_e5m2")["bytes_per_token"] == 131_072 // 2
    assert base["deployment"]["tp"] == 1
    assert cli.json("kv", "llama-3-8b", "--target", "2xh100", "--tensor-parallel-size", "2")["kv"]["tp"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["kv", "llama-3-8b", "--quantization", "fbgemm_fp8"],
         "fbgemm_fp8 is a vLLM quantization mha does not price; of vLLM's it prices fp8, fp8_per_tensor,"
         " fp8_per_block, awq, auto_awq, gptq,"),
        (["kv", "llama-3-8b", "--quantization", "hqq"], "hqq is a vLLM quantization mha does not"),
        (["kv", "llama-3-8b", "--quantization", "compressed-tensors"],
         "compressed-tensors checkpoints are priced from their own quantization_config, tensor by tensor: give the"),
        (["kv", "llama-3-8b", "--quantization", "awq_marlin"],
         "awq_marlin is vLLM's Marlin kernel for awq checkpoints (its repacked bytes are not priced): give awq"),
        (["kv", "llama-3-8b", "--kv-cache-dtype", "fp8_e3m4"], "unknown dtype 'fp8_e3m4'"),
        (["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--max-model-len", "1024"],
         "--max-model-len 1024: the engine refuses requests longer than it, and --isl + --osl is 1,280: give at least"
         " 1280"),
        (["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--max-model-len", "0"],
         "--max-model-len: token count '0' must be positive"),
    ],
)  # fmt: skip
def test_a_vllm_value_mha_does_not_price_is_refused_in_one_line(cli, args, message):
    result = cli.run(*args)
    assert result.exit_code == EXIT_BAD_INPUT
    assert message in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("spelling", ["--kv-cache-dtype", "--kv-dtype"])
def test_an_unknown_kv_format_names_the_option_as_typed_and_every_value_it_takes(cli, spelling):
    result = cli.run("kv", "llama-3-8b", spelling, "foo")
    assert result.exit_code == EXIT_BAD_INPUT and result.stderr.count("\n") == 1
    assert (
        f"{spelling}: unknown dtype 'foo': use one of fp32, fp16, bf16, fp8, fp8_ds_mla, nvfp4, int8, int4"
        " (or vLLM's auto, fp8_e4m3, fp8_e5m2)"
    ) in result.stderr


def test_every_command_taking_tp_or_pp_takes_vllms_names_too():
    commands = typer.main.get_command(app).commands
    for name, command in commands.items():
        opts = {opt for param in command.params for opt in param.opts}
        if name == "calibrate":
            assert "--tensor-parallel-size" not in opts  # its --tp is an all-reduce measurement, not a layout
            continue
        assert ("--tp" in opts) == ("--tensor-parallel-size" in opts), name
        assert ("--pp" in opts) == ("--pipeline-parallel-size" in opts), name
        assert ("--kv-dtype" in opts) == ("--kv-cache-dtype" in opts), name
        assert ("--weight-dtype" in opts) == ("--quantization" in opts), name
    assert "--tensor-parallel-size" in {o for p in commands["verify"].params for o in p.opts}


@pytest.mark.parametrize("spelling", ["--quantization", "--weight-dtype"])
def test_an_unknown_weight_format_names_the_option_as_typed(cli, spelling):
    """vLLM's --quantization pasted from a vLLM command line is named so in the refusal, not as mha's --weight-dtype
    (before: every refusal of the value said --weight-dtype)."""
    result = cli.run("kv", "llama-3-8b", spelling, "foo")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == "" and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {spelling}: unknown weight format 'foo': use one of fp32, fp16, bf16,")
    refused = cli.run("plan", "llama-3-8b", "--target", "h100", "--tp", "1", f"{spelling}=bitsandbytes")
    assert refused.exit_code == EXIT_BAD_INPUT and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"error: {spelling}: bitsandbytes is a vLLM quantization mha does not price")


@pytest.mark.parametrize("stages", ["0", "-1"])
def test_a_pipeline_size_below_one_is_refused_not_read_as_one(cli, stages):
    """vLLM's --pipeline-parallel-size=0 pasted: before, plan priced pp 1 as if none were given (0 read as the
    default), and -1 was refused as not dividing the devices."""
    result = cli.run("plan", "llama-3-8b", "--target", "8xh100", f"--pipeline-parallel-size={stages}")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
    assert result.stderr == f"error: --pipeline-parallel-size {stages}: give 1 or more\n"  # was --pp: as typed now


@pytest.mark.parametrize(
    "command", [["kv", "llama-3-8b"], ["plan", "llama-3-8b"], ["check", "llama-3-8b"], ["recommend", "--params", "7B"]]
)
def test_a_tensor_parallel_size_below_one_names_the_option_as_typed(cli, command):
    """Before: kv said '--tp: must be greater than 0 (got -1)', plan '--tp -1: give 1 or more'."""
    for spelling in ("--tensor-parallel-size", "--tp"):
        result = cli.run(*command, "--target", "8xh100", f"{spelling}=-1")
        assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
        assert result.stderr == f"error: {spelling} -1: give 1 or more\n"


def test_kimi_k2_by_its_hugging_face_id_prices_as_its_published_config(cli):
    """`mha plan moonshotai/Kimi-K2-Instruct ...` pasted without a cached config: before, exit 2 (not in the cache,
    no preset). The preset stands in, and prices as the published config.json does: 61 x 576 x 2 = 70,272 B/token
    in bf16, 1,026,408,209,408 parameters stored in fp8 blocks."""
    by_id = cli.json("kv", "moonshotai/Kimi-K2-Instruct")
    by_file = cli.json("kv", "tests/fixtures/hf_configs/kimi-k2-instruct.json")
    assert by_id["bytes_per_token"] == by_file["bytes_per_token"] == 61 * 576 * 2
    assert by_id["deployment"]["weight_dtype"] == by_file["deployment"]["weight_dtype"] == "fp8-block"
    assert by_id["params"] == by_file["params"] and by_id["params"]["total"] == 1_026_408_209_408

    def shape(model: dict) -> dict:
        return {key: value for key, value in model.items() if key not in ("name", "source")}

    assert shape(by_id["model"]) == shape(by_file["model"])  # every figure, the RoPE's and the router's too
    assert by_id["weight_bytes"] == by_file["weight_bytes"] == 1_029_173_157_728


@pytest.mark.parametrize("hf_id, fixture", [("MiniMax-M2", "minimax-m2"), ("MiniMax-M2.7", "minimax-m2.7")])
def test_minimax_m2_by_its_hugging_face_id_prices_as_its_published_config(cli, hf_id, fixture):
    """`mha kv MiniMaxAI/MiniMax-M2` pasted without a cached config: before, exit 2 (not in the cache, no preset).
    The preset stands in, and prices as the published config.json does: 62 layers x 8 KV heads x 128 x 2 (K and V)
    x 2 B = 253,952 B/token in bf16, 228,689,748,992 parameters stored in fp8 blocks. M2.7 differs only in its
    window (204,800) and MTP fields that neither reads."""
    by_id = cli.json("kv", f"MiniMaxAI/{hf_id}")
    by_file = cli.json("kv", f"tests/fixtures/hf_configs/{fixture}.json")
    assert by_id["bytes_per_token"] == by_file["bytes_per_token"] == 62 * 8 * 128 * 2 * 2 == 253_952
    assert by_id["deployment"]["weight_dtype"] == by_file["deployment"]["weight_dtype"] == "fp8-block"
    assert by_id["params"] == by_file["params"] and by_id["params"]["total"] == 228_689_748_992

    def shape(model: dict) -> dict:
        return {key: value for key, value in model.items() if key not in ("name", "source")}

    assert shape(by_id["model"]) == shape(by_file["model"])  # partial RoPE, q/k norm span and router too
    assert by_id["model"]["attention"]["rope"]["partial_rotary_factor"] == 0.5  # rotary_dim 64 of head_dim 128
    assert by_id["weight_bytes"] == by_file["weight_bytes"] == 230_024_049_664
    assert by_id["total_bytes"] == by_file["total_bytes"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["kv", "llama-3-8b", "--max-model-len", "1.5K"], "vLLM takes no decimals with a binary suffix (K)"),
        (["kv", "llama-3-8b", "--max-model-len", "8x"], "cannot read token count '8x' as vLLM does"),
        (["kv", "llama-3-8b", "--max-model-len", "10T"],  # named as typed, not --seq (trial 326 #4)
         "error: --max-model-len: must be at most 17,179,869,184 tokens (got '10T' = 10,995,116,277,760)"),
        (["plan", "llama-3-8b", "--target", "h100", "--isl", "7000", "--osl", "1200", "--max-model-len", "8K"],
         "--max-model-len 8K (8,192 tokens as vLLM reads it): the engine refuses requests longer than it"),
    ],
)  # fmt: skip
def test_a_max_model_len_vllm_would_not_read_so_is_refused_in_one_line(cli, args, said):
    result = cli.run(*args)
    assert result.exit_code == EXIT_BAD_INPUT and said in result.stderr and len(result.stderr.splitlines()) == 1


def test_an_alias_s_bad_value_names_every_spelling(cli):
    """Trial 351 #9: `--mem-fraction-static 0` was answered as `--gpu-memory-utilization`, a flag not typed."""
    result = cli.run("plan", "llama-3-8b", "--target", "h100", "--engine", "sglang", "--mem-fraction-static", "0")
    assert result.exit_code == 2
    assert result.output.strip().startswith(
        "error: --gpu-memory-utilization (or --mem-fraction-static, --free-gpu-memory-fraction): must be greater than 0"
    )
