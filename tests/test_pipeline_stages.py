"""Pipeline stages by release (``core.engine.pipeline_stages``): SGLang before 0.4.6.post2 has no ``--pp-size`` and
vLLM before 0.5.3 refuses ``--pipeline-parallel-size`` > 1 on a one-node server (read in the 0.5.0.post1, 0.5.1,
0.5.2 and 0.5.3 wheels). A ``--pp`` asked is refused in one line (exit 2); a search leaves the layout out, saying why,
and never picks a layout whose priced engine could not start it (it once picked pp 2 on SGLang 0.4.0 and wrote a
vLLM line for it)."""

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT


@pytest.mark.parametrize(
    ("engine", "refused"),
    [("sglang@0.4.0", True), ("sglang@0.4.6", True), ("sglang@0.4.6.post1", True), ("sglang@0.4.6.post2", False),
     ("sglang@0.4", False), ("sglang", False), ("vllm@0.4.0", True), ("vllm@0.5.2", True), ("vllm@0.5.3", False),
     ("vllm-v0", False), ("vllm", False), ("trtllm", False)],
)  # fmt: skip
def test_pipeline_stages_by_release(engine, refused):
    """Untyped, a generation means its latest: sglang@0.4 its last 0.4 patch (has --pp-size), vllm-v0 0.7."""
    from mha_cli.core.engine.generations import generation_of, typed_release
    from mha_cli.core.engine.pipeline_stages import pipeline_refusal

    chosen = generation_of(engine)
    args = (chosen.engine, chosen.id, typed_release(engine))
    assert (pipeline_refusal(*args, 2) is not None) is refused
    assert pipeline_refusal(*args, 1) is None


PLAN = ("plan", "llama-3-8b", "--target", "2xh100", "--isl", "1024", "--osl", "128", "--closed-form")


def test_a_pinned_pp_on_sglang_0_4_0_is_refused_in_one_line(cli):
    refused = cli.run(*PLAN, "--engine", "sglang@0.4.0", "--pp", "2", "--concurrency", "4")
    assert refused.exit_code == EXIT_BAD_INPUT and refused.stdout == ""
    assert refused.stderr == (
        "error: --pp 2: SGLang 0.4.0 has no --pp-size (pipeline stages first in 0.4.6.post2): use --pp 1, or --engine"
        " sglang@0.4.6.post2 or later\n"
    )
    vllm = cli.run(*PLAN, "--engine", "vllm@0.5.2", "--pp", "2", "--concurrency", "4")
    assert vllm.exit_code == EXIT_BAD_INPUT and vllm.stderr.startswith(
        "error: --pp 2: vLLM 0.5.2 refuses --pipeline-parallel-size above 1 on its default executor"
    )
    assert cli.run(*PLAN, "--engine", "sglang@0.4.6.post2", "--pp", "2", "--concurrency", "4").exit_code == 0


def test_a_search_on_sglang_0_4_0_leaves_pp_out_and_writes_the_sglang_line(cli):
    plan = cli.json(*PLAN, "--engine", "sglang@0.4.0")
    left_out = [line for line in plan["layouts"] if "left out" in line]
    assert left_out == [
        "tp 1 x pp 2 x 1 replica(s): left out (--pp 2: SGLang 0.4.0 has no --pp-size (pipeline stages first in"
        " 0.4.6.post2): use --pp 1, or --engine sglang@0.4.6.post2 or later)"
    ]
    assert all(candidate["deployment"]["pp"] == 1 for candidate in plan["candidates"])
    assert "--pp-size" not in plan["launch"]["sglang"] and "--tp-size" in plan["launch"]["sglang"]
