"""A weight format that quantises routed experts alone, asked for a dense model, is refused once: ``mha plan
llama-3.1-8b --target 8xh100 --quantization mxfp4`` (a search) repeated the same refusal for every layout in one
2,066-character line cut at 1,000 characters ("no deployment ... starts: tp 1 x pp 1 x 8 replica(s): left out
(--weight-dtype mxfp4 quantises routed experts ...); tp 1 x pp 2 x 4 replica(s): left out (...)..."), where
``mha kv`` said it in one line."""

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT

ONE_LINE = (
    "error: --weight-dtype mxfp4 quantises routed experts and llama-3.1-8b has none: use mxfp4-linear for MXFP4 on"
    " every linear layer (AMD Quark), or fp8, nvfp4, int4 or awq\n"
)


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "llama-3.1-8b", "--target", "8xh100", "--closed-form"],
        ["plan", "llama-3.1-8b", "--target", "8xh100", "--disaggregated"],
        ["plan", "llama-3.1-8b", "--target", "8xh100", "--tp", "2", "--closed-form"],
        ["kv", "llama-3.1-8b"],
    ],
    ids=["search", "disaggregated", "pinned", "kv"],
)
def test_an_experts_only_format_on_a_dense_model_is_one_refusal(cli, args):
    result = cli.run(*args, "--quantization", "mxfp4", "--json")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
    assert result.stderr == ONE_LINE


@pytest.mark.parametrize("command", [["plan", "--tp", "8", "--closed-form"], ["kv"]])
def test_the_way_out_on_an_amd_target_names_no_nvidia_format(cli, command):
    """Trial 402 #8: on an MI355X the refusal offered NVIDIA's NVFP4 among the ways out."""
    result = cli.run(command[0], "llama-3.1-8b", "--target", "8xmi355x", *command[1:], "--quantization", "mxfp4")
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.strip().endswith(
        "use mxfp4-linear for MXFP4 on every linear layer (AMD Quark), or fp8, int4 or awq"
    )


def test_recommend_s_dense_design_is_named_and_its_way_out_is_the_target_s(cli):
    """Review 403 #7: recommend said "recommended has none" and offered NVFP4 on an MI300X."""
    result = cli.run("recommend", "--params", "8b", "--seq", "8k", "--target", "mi300x", "--weight-dtype", "mxfp4")
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.strip() == (
        "error: --weight-dtype mxfp4 quantises routed experts and the dense design (--active-params makes an MoE) has"
        " none: use mxfp4-linear for MXFP4 on every linear layer (AMD Quark), or fp8, int4 or awq"
    )
