"""A KV format the engine does not offer (int8 on vLLM and SGLang: ``core.engine.plan.KV_FORMATS``) is said wherever its
figures are printed. ``mha kv`` said it; a pinned ``mha plan`` priced vLLM's pool in int8 (about twice what vLLM
allocates) with no word of it (found by newuser trial 229)."""

import pytest

NOTE = (
    "{engine} has no int8 KV cache (it offers {offers}): these figures are that format's bytes, not a deployment it"
    " runs"
)
VLLM_NOTE = (
    "vLLM's int8 KV cache (--kv-cache-dtype int8_per_token_head, from 0.20.0) keeps a scale per token and head that mha"
    " does not price (it prices {offers} on vLLM): these figures are that format's bytes, not a deployment it runs"
)
"""vLLM's own int8 cache from 0.20.0 (trial 359 #6): named, and refused as unpriced."""
PINNED = ("plan", "llama-3.1-70b", "--target", "8xh100", "--tp", "4", "--concurrency", "8", "--closed-form")


@pytest.mark.parametrize(
    ("engine", "offers"),
    [("vllm", "fp32, fp16, bf16, fp8, fp8_ds_mla, nvfp4"), ("sglang", "fp32, fp16, bf16, fp8, fp8_ds_mla")],
)
def test_a_pinned_plan_refuses_a_cache_the_engine_has_not(cli, engine, offers):
    """plan said so in a note and priced the int8 pool anyway; a search then picked on capacity the engine cannot reach
    (newuser trial 248): plan now refuses it, naming what the engine offers; kv keeps the note (below)."""
    result = cli.run(*PINNED, "--engine", engine, "--kv-cache-dtype", "int8")
    name = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
    note = (VLLM_NOTE if engine == "vllm" else NOTE).format(engine=name, offers=offers)
    assert result.exit_code == 2 and note.split(":")[0] in result.output
    assert (
        note
        in cli.json("kv", "llama-3.1-70b", "--target", "8xh100", "--engine", engine, "--kv-cache-dtype", "int8")[
            "engine"
        ]["notes"]
    )


@pytest.mark.parametrize(
    ("engine", "kv"), [("vllm", "fp8"), ("vllm", "bf16"), ("trtllm-cpp", "int8"), ("trtllm", "fp8")]
)
def test_a_format_the_engine_offers_gets_no_such_note(cli, engine, kv):
    result = cli.json(*PINNED, "--engine", engine, "--kv-cache-dtype", kv)
    assert not [note for note in result["notes"] if "KV cache (it offers" in note]


def test_check_counts_it_as_a_warning(cli):
    """``mha check`` passed an int8 cache on vLLM with 0 warnings (found by newuser trial 229): it now counts the note
    (``--strict`` fails on it), and the engine's plan says vLLM stops at start-up (its memory plan said it starts
    and logged a pool: trial 271 #1). It is the one warning: MHA026 (does not fit) fired beside it until the refusal
    was told apart from memory (trial 274 #2). On TensorRT-LLM's C++ engine, which has one, no warning."""
    common = ("check", "llama-3-8b", "--target", "h20", "--kv-dtype", "int8")
    on_vllm, on_trtllm = cli.json(*common, "--engine", "vllm"), cli.json(*common, "--engine", "trtllm-cpp")
    offers = "fp32, fp16, bf16, fp8, fp8_ds_mla, nvfp4"
    expected = VLLM_NOTE.format(offers=offers)
    assert on_vllm["deployment_warnings"] == [expected] and on_vllm["warnings"] == 1
    assert "MHA026" not in on_vllm["rules_fired"] and on_vllm["errors"] == 0
    assert not on_vllm["memory"]["engine"]["starts"]
    assert on_vllm["memory"]["engine"]["log_lines"] == [expected.split(":")[0]]
    assert on_trtllm["warnings"] == 0
    assert cli.run(*common, "--engine", "vllm", "--strict").exit_code == 1


@pytest.mark.parametrize(("engine", "per_layer"), [("vllm", 788), ("sglang", 788), ("trtllm", 708)])
def test_fp8_on_a_sparse_mla_model_is_priced_in_the_layout_the_engine_allocates(cli, engine, per_layer):
    """DeepSeek-V3.2 with --kv-dtype fp8 was priced 708 B a layer (576 fp8 + the indexer's 132) on every engine,
    where vLLM on an H200 (FLASHMLA_SPARSE: core.engine.sparse_mla_kv) and SGLang (NSATokenToKVPool's kv_cache_dim) hold
    656 + 132 = 788: 11% more capacity than they have (found by newuser trial 240). TensorRT-LLM's is not read."""
    data = cli.json("kv", "tests/fixtures/hf_configs/deepseek-v3.2-exp.json", "--target", "8xh200", "--kv-dtype",
                    "fp8", "--seq", "128k", "--engine", engine)  # fmt: skip
    assert data["kv"]["bytes_per_token"] == 61 * per_layer  # 61 layers
    assert data["deployment"]["kv_dtype"] == ("fp8" if engine == "trtllm" else "fp8_ds_mla")
    assert not any("has no fp8_ds_mla" in note for note in data["memory"]["engine"]["notes"])


def test_trtllms_pytorch_backend_has_no_int8_cache(cli):
    """trtllm-serve's PyTorch backend (the latest TensorRT-LLM, ``trtllm-pytorch``) takes kv_cache_config.dtype auto
    or fp8 and only warns about int8: plan priced an int8 cache its own launch line said it does not run (found by
    newuser trial 251). Refused now as vLLM's int8 is; the C++ engine (``--engine trtllm-cpp``) keeps it."""
    args = ("llama-3.1-8b", "--target", "b200", "--kv-dtype", "int8")
    refused = cli.run("plan", *args, "--tp", "1", "--engine", "trtllm", "--closed-form")
    assert refused.exit_code == 2 and (
        "error: --kv-dtype int8: TensorRT-LLM's PyTorch backend has no int8 KV cache (its kv_cache_config.dtype takes"
        " auto or fp8; int8 is the C++ engine's, --engine trtllm-cpp); a plan prices a deployment the engine runs"
    ) in " ".join(refused.output.split())
    assert cli.run("plan", *args, "--tp", "1", "--engine", "trtllm-cpp", "--closed-form").exit_code == 0
    noted = cli.json("kv", *args, "--engine", "trtllm@1.0")["memory"]["engine"]["notes"]
    assert any(note.startswith("TensorRT-LLM's PyTorch backend has no int8 KV cache") for note in noted)


E5M2_MLA = (
    "vLLM's MLA backends on NVIDIA H200 SXM 141GB cache fp8 as e4m3 alone (FlashMLA, FlashInfer MLA, CUTLASS MLA,"
    " Triton MLA: supported_kv_cache_dtypes, 0.21.0 and 0.32.0), not deepseek-v3's latent as fp8_e5m2"
)


def test_an_e5m2_cache_for_mla_on_vllm_is_refused_where_no_backend_takes_it(cli):
    """vLLM's NVIDIA MLA backends list fp8 and fp8_e4m3 alone (supported_kv_cache_dtypes, 0.21.0 and 0.32.0 wheels):
    plan priced DeepSeek-V3 with --kv-cache-dtype fp8_e5m2 and printed a line no backend starts (trial 261 #2). On an
    MI300X vLLM runs Triton MLA unless VLLM_ROCM_USE_AITER=1 (review 263 #5): refused too, saying so; a GQA model keeps
    it on NVIDIA (FlashAttention's fp8 is not judged here); 0.20 is not read."""
    from tests.conftest import reference_hf_config

    deepseek = str(reference_hf_config("deepseek-v3"))
    pinned = ["plan", deepseek, "--target", "8xh200", "--tp", "8", "--concurrency", "4", "--closed-form"]
    refused = cli.run(*pinned, "--kv-cache-dtype", "fp8_e5m2")
    assert refused.exit_code == 2 and f"error: --kv-dtype fp8_e5m2: {E5M2_MLA}; a plan prices" in refused.output
    assert cli.run(*pinned, "--kv-cache-dtype", "fp8").exit_code == 0
    kv = ["kv", deepseek, "--seq", "8k", "--kv-cache-dtype", "fp8_e5m2"]
    assert any(note.startswith(E5M2_MLA) for note in cli.json(*kv, "--target", "8xh200")["engine"]["notes"])
    amd = cli.json(*kv, "--target", "8xmi300x")["engine"]["notes"]
    assert any(
        "runs MLA in Triton MLA, whose fp8 is e4m3 alone" in note and "VLLM_ROCM_USE_AITER=1" in note for note in amd
    )
    for other in (["--target", "8xh200", "--engine", "vllm@0.20"], ["--target", "8xh200", "--engine", "sglang"]):
        assert not any("fp8_e5m2" in note for note in cli.json(*kv, *other)["engine"]["notes"]), other
    gqa = cli.json("kv", "llama-3.1-8b", "--target", "h200", "--kv-cache-dtype", "fp8_e5m2")
    assert not any("e4m3 alone" in note for note in gqa["engine"]["notes"])


def test_kv_says_the_engine_stops_for_a_cache_it_refuses_on_that_gpu(cli):
    """`mha kv` printed what vLLM "would log" (a pool of 363,216 tokens) and `starts: true` for an nvfp4 cache on a
    V100, which vLLM refuses before sizing any pool, and `--fail-if-no-fit` exited 0; plan refuses it (trial 271
    #1). The engine's plan now stops at start-up with that refusal; the format's bytes stay in the KV table."""
    common = ("kv", "llama-3.1-8b", "--kv-dtype", "nvfp4", "--engine", "vllm@0.32", "--seq", "32k")
    args = (*common, "--target", "v100")
    engine = cli.json(*args)["memory"]["engine"]
    refusal = "vLLM's nvfp4 KV cache runs on compute capability 8.x, 9.x, 10.x or 12.x, not on NVIDIA Tesla V100"
    assert not engine["starts"] and engine["refusal"].startswith(refusal)
    assert engine["log_lines"] == [engine["refusal"]]
    assert cli.run(*args, "--fail-if-no-fit").exit_code == 1
    assert cli.run(*common, "--target", "h100", "--fail-if-no-fit").exit_code == 0  # the control: it runs there


@pytest.mark.parametrize(
    ("release", "noted"), [("0.7.3", True), ("0.20.0", False), ("0.21.0", False), (None, False)]
)  # 0.7.3: V0's plan says it too (review 308 #4); before 0.7.1 no MLA latent is cached (test_mla_latent_release.py);
# 0.8-0.20 on Hopper were read since (trial 368 #2: refused before 0.10.2, below; from it, FlashMLA takes fp8)
def test_an_fp8_mla_cache_on_a_release_whose_backends_were_not_read_says_so(cli, release, noted):
    """Trial 307 #1: Kimi-K2's fp8 latent on vLLM 0.10 was priced (35,136 B a token, per the fp8 bytes: 61 layers x
    576) with nothing said, where the MLA backends before 0.21.0 were never read for an fp8 cache."""
    engine = ["--engine", f"vllm@{release}"] if release else []
    report = cli.json("kv", "kimi-k2", "--target", "2x8xh20", "--tp", "16", "--kv-cache-dtype", "fp8", "--seq", "32768",
                      *engine)  # fmt: skip
    assert report["bytes_per_token"] == 61 * 576
    said = [note for note in report["engine"]["notes"] if "were not read for an fp8 cache" in note]
    assert bool(said) == noted
    bf16 = cli.json("kv", "kimi-k2", "--target", "2x8xh20", "--tp", "16", "--seq", "32768", *engine)
    assert not any("were not read for an fp8 cache" in note for note in bf16["engine"]["notes"])


@pytest.mark.parametrize(
    ("target", "release", "stops"),
    [
        ("h100", "0.9.2", "FlashMLA V1 with FP8 KV cache not yet supported"),
        ("h100", "0.10.1.1", "FlashMLA V1 with FP8 KV cache not yet supported"),
        ("h100", "0.10.2", None),  # FlashMLA takes fp8 from 0.10.2
        ("b200", "0.10.0", "TritonMLA V1 with FP8 KV cache not yet supported"),  # review 373 #6: CUTLASS if named
        ("b200", "0.9.2", "not read"),  # review 370 #6: V1 keeps fp8 on 10.0 from 0.10.0 only (V0 before)
        ("b300", "0.11.0", "TritonMLA V1 with FP8 KV cache not yet supported"),  # 10.3: FlashMLA Hopper-only
        ("b300", "0.15.0", None),  # review 370 #5: from 0.15 the 10.x family runs FlashInfer MLA / CUTLASS MLA
        ("a100-80gb", "0.10.2", "TritonMLA V1 with FP8 KV cache not yet supported"),
        ("a100-80gb", "0.15.0", "TritonMLA V1 with FP8 KV cache not yet supported"),
        ("a100-80gb", "0.18.0", None),  # Triton MLA lists fp8 from 0.18.0
    ],
)
def test_an_fp8_mla_cache_on_an_early_v1_release_is_refused_where_its_backend_stops(cli, target, release, stops):
    """Trial 368 #2: DeepSeek-V2-Lite's fp8 latent on vLLM 0.10.0 on an H100 was priced with a "check it starts" note,
    where the release's FlashMLA raises at start-up (read in the 0.8.5-0.10.1.1 wheels; CUTLASS MLA on the B200 and
    Triton MLA alike); on Ampere, from 0.10.2 (V1 taking the cache), Triton MLA raises until 0.18.0. Now kv says the
    engine stops, and plan refuses; the controls start. The bytes stay the fp8 latent's (27 layers x 576)."""
    from tests.conftest import reference_hf_config

    config = str(reference_hf_config("deepseek-v2-lite"))
    args = ("kv", config, "--target", target, "--kv-cache-dtype", "fp8", "--engine", f"vllm@{release}")
    engine = cli.json(*args)["engine"]
    assert cli.json(*args)["bytes_per_token"] == 27 * 576
    if stops is None:
        assert engine["starts"] and not any("were not read for an fp8 cache" in n for n in engine["notes"])
        return
    if stops == "not read":  # V0's fallback, not read: priced, and the user told to check
        assert engine["starts"] and any("were not read for an fp8 cache" in n for n in engine["notes"])
        return
    assert not engine["starts"] and f"vLLM {release} " in engine["refusal"] and stops in engine["refusal"]
    refused = cli.run("plan", config, "--target", target, "--kv-cache-dtype", "fp8", "--engine", f"vllm@{release}",
                      "--closed-form")  # fmt: skip
    assert refused.exit_code == 2 and stops in refused.output
