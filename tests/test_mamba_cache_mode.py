"""vLLM's prefix cache for a model with Mamba or linear-attention layers, release by release
(``core.engine.mamba_cache_mode``): off by default before 0.28.0 and on after, turned off before 0.11.1, the ``all``
mode for the Mamba-1/Mamba-2 families until 0.28.0 (refused: not priced), the ``align`` mode's two state pages a
request (three for a Mamba-2 mixer from 0.32.0), and what a shared prefix's hit serves.

Nemotron-3-Nano-30B-A3B (``hf_configs/nvidia-nemotron-3-nano-30b-a3b.json``, ``nemotron_h``: 23 Mamba-2 layers and
6 attention layers) and Qwen3-Next-80B-A3B (``qwen3_next``: 36 Gated DeltaNet layers and 12 attention layers)."""

from __future__ import annotations

import pytest

from mha_cli.core.engine.mamba_cache_mode import (
    hybrid_prefix_caching_default,
    prefix_caching_default,
    serves_shared_prefix,
    state_pages,
    vllm_mamba_cache_mode,
)
from mha_cli.core.engine.release_numbers import LATEST, release_key
from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config

NEMOTRON_CONFIG = "tests/fixtures/hf_configs/nvidia-nemotron-3-nano-30b-a3b.json"
QWEN3_NEXT_CONFIG = "tests/fixtures/hf_configs/qwen3-next-80b-a3b.json"
NEMOTRON = load_source(NEMOTRON_CONFIG).model
QWEN3_NEXT = load_source(QWEN3_NEXT_CONFIG).model
LLAMA = load_source("tests/fixtures/hf_configs/llama-3-8b.json").model
NEWEST = (0, LATEST, 0, 0)


@pytest.mark.parametrize(
    ("release", "asked", "nemotron", "qwen3_next"),
    [
        ("0.11.0", True, "none", "none"),  # turned off for every hybrid
        ("0.13.0", True, "all", "none"),  # kept for SupportsMambaPrefixCaching only
        ("0.20.0", None, "none", "none"),  # off by default
        ("0.20.0", True, "all", "align"),
        ("0.25.0", True, "all", "align"),
        ("0.26.0", True, "all", "align"),
        ("0.27.0", None, "none", "none"),  # still opt-in for a hybrid
        ("0.27.0", False, "none", "none"),
        ("0.28.0", None, "align", "align"),  # align for every model
        ("0.32.0", None, "align", "align"),
    ],
)
def test_the_mode_by_release(release, asked, nemotron, qwen3_next):
    key = release_key(release)
    assert vllm_mamba_cache_mode(NEMOTRON, key, asked) == nemotron
    assert vllm_mamba_cache_mode(QWEN3_NEXT, key, asked) == qwen3_next


def test_the_default_and_a_model_without_a_state():
    assert not hybrid_prefix_caching_default(release_key("0.27.1"))
    assert hybrid_prefix_caching_default(release_key("0.28.0")) and hybrid_prefix_caching_default(NEWEST)
    assert vllm_mamba_cache_mode(LLAMA, NEWEST, True) == "none"  # no state group to run in a mode
    mamba = load_source("tests/fixtures/hf_configs/mamba-2.8b-hf.json").model  # attention-free: off unless asked
    assert not prefix_caching_default(mamba, NEWEST) and prefix_caching_default(QWEN3_NEXT, NEWEST)
    assert (
        vllm_mamba_cache_mode(mamba, NEWEST, None) == "none" and vllm_mamba_cache_mode(mamba, NEWEST, True) == "align"
    )
    assert prefix_caching_default(LLAMA, release_key("0.10.2"))  # its own cache: on unless asked off
    assert not prefix_caching_default(QWEN3_NEXT, release_key("0.27.0"))
    assert vllm_mamba_cache_mode(QWEN3_NEXT, release_key("0.27.0"), True) == "align"
    assert prefix_caching_default(QWEN3_NEXT, release_key("0.28.0"))


def test_state_pages_and_shared_prefixes():
    """align holds 2 pages; a Mamba-2 mixer's prefill checkpoint adds one from 0.32.0 (MambaMixer2), not a Gated
    DeltaNet's; a shared prefix is served from 0.26.0, where the scheduler stops at its junction."""
    assert state_pages(NEMOTRON, NEWEST, "none") == 1
    assert state_pages(NEMOTRON, release_key("0.31.0"), "align") == 2
    assert state_pages(NEMOTRON, release_key("0.32.0"), "align") == 3
    assert state_pages(QWEN3_NEXT, release_key("0.32.0"), "align") == 2
    assert state_pages(QWEN3_NEXT, release_key("0.33.0"), "align", gdn_page=True) == 3  # FlashInfer's GDN prefill
    assert state_pages(QWEN3_NEXT, release_key("0.32.0"), "align", draft_tokens=2) == 4  # a page a draft token
    assert state_pages(QWEN3_NEXT, release_key("0.32.0"), "none", draft_tokens=2) == 3
    assert state_pages(QWEN3_NEXT, release_key("0.14.0"), "none", draft_tokens=2) == 1  # before 0.15
    assert vllm_mamba_cache_mode(NEMOTRON, release_key("0.21.0"), True, speculative=True) == "align"
    assert not serves_shared_prefix(release_key("0.21.0"), "align")
    assert serves_shared_prefix(release_key("0.24.0"), "align")  # the Marconi stop at a shared prefix
    assert not serves_shared_prefix(NEWEST, "none")


def _engine(cli, *args: str) -> dict:
    return cli.json("kv", NEMOTRON_CONFIG, "--target", "h100", "--seq", "8192", *args)["memory"]["engine"]


def test_the_default_vllm_holds_three_pages_a_request_by_hand(cli):
    """Nemotron on one H100 at 8,192 tokens: the latest vLLM's default (align, 3 pages in each of 4 state groups of
    6 layers, beside the attention group's ceil(8192 / block)) against --no-enable-prefix-caching (1 page)."""
    on, off = _engine(cli), _engine(cli, "--no-enable-prefix-caching")
    assert (on["mamba_cache_mode"], "mamba_cache_mode" in off) == ("align", False)
    assert on["kv_blocks"] == off["kv_blocks"] and on["block_size"] == off["block_size"]
    attention = -(-8192 // on["block_size"])
    groups = [group["kind"] for group in on["groups"]]
    assert groups.count("state") == 4 and groups.count("full") == 1
    assert on["max_concurrency"] == pytest.approx(on["kv_blocks"] / (attention + 4 * 3))
    assert off["max_concurrency"] == pytest.approx(off["kv_blocks"] / (attention + 4 * 1))


def test_the_all_mode_is_refused_with_its_ways_out(cli):
    refused = cli.run("kv", NEMOTRON_CONFIG, "--target", "h100", "--engine", "vllm@0.27", "--enable-prefix-caching")
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "Mamba 'all' mode" in line and "drop --enable-prefix-caching" in line
    assert "mamba_cache_mode" not in _engine(cli, "--engine", "vllm@0.27")  # opt-in before 0.28
    assert _engine(cli, "--engine", "vllm@0.28")["mamba_cache_mode"] == "align"
    qwen = cli.json(
        "kv", QWEN3_NEXT_CONFIG, "--target", "4xh100", "--tp", "4", "--engine", "vllm@0.27", "--enable-prefix-caching"
    )
    assert qwen["memory"]["engine"]["mamba_cache_mode"] == "align"  # Gated DeltaNet: align, not all


def test_a_release_that_turns_the_cache_off_says_so(cli):
    engine = _engine(cli, "--engine", "vllm@0.11.0", "--enable-prefix-caching")
    assert "mamba_cache_mode" not in engine
    assert any("turns prefix caching off" in note for note in engine["notes"])


def test_the_launch_line_and_the_hit(cli):
    """The latest vLLM caches the hybrid's prefixes by default: no flag on its line, and a 6,000-token shared prefix
    served in whole blocks; vLLM 0.21 does not by default (no flag, no hit), nor with the cache off; asked, 0.21
    writes the flag but serves no hit (it stops a prefill at a shared prefix, caching its state, from 0.24)."""
    args = ("plan", QWEN3_NEXT_CONFIG, "--target", "4xh100", "--tp", "4", "--concurrency", "16", "--isl", "8192",
            "--osl", "256", "--shared-prefix", "6000", "--closed-form")  # fmt: skip
    on, old, off = (  # each priced by its vLLM generation's constants
        cli.json(*args, "--engine", "vllm"),
        cli.json(*args, "--engine", "vllm@0.21"),
        cli.json(*args, "--engine", "vllm", "--no-enable-prefix-caching"),
    )
    block = on["memory"]["engine"]["block_size"]
    served = f"prefix cache: {6000 // block * block:,} of each 8,192-token prompt served from the cache"
    assert 6000 // block > 0 and any(note.startswith(served) for note in on["notes"])
    assert not any(note.startswith("prefix cache: 5") for note in old["notes"] + off["notes"])
    assert on["ttft_ms"] < off["ttft_ms"] == pytest.approx(old["ttft_ms"], rel=0.05)
    assert "prefix-caching" not in on["launch"]["vllm"] and "prefix-caching" not in old["launch"]["vllm"]
    assert off["launch"]["vllm"].endswith("--no-enable-prefix-caching")
    asked = cli.json(*args, "--engine", "vllm@0.21", "--enable-prefix-caching")
    assert "--enable-prefix-caching" in asked["launch"]["vllm"]
    assert not any(note.startswith("prefix cache: 5") for note in asked["notes"])  # no stop at a prefix before 0.24


def test_a_search_refuses_the_all_mode_once_not_layout_by_layout(cli):
    """No layout changes the mode: a search says the one line, not "no deployment starts"."""
    refused = cli.run("plan", NEMOTRON_CONFIG, "--target", "2xh100", "--isl", "4096", "--osl", "512", "--concurrency",
                      "32", "--closed-form", "--engine", "vllm@0.25", "--enable-prefix-caching")  # fmt: skip
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and line.startswith("error: vLLM 0.25.x caches") and "layouts" not in line


QWEN35_CONFIG = "tests/fixtures/hf_configs/qwen3.5-4b.json"


def test_a_gated_deltanet_checkpoint_from_033_on_hopper_by_hand(cli):
    """Qwen3.5-4B (24 Gated DeltaNet layers, 8 attention layers of 4 KV heads of 256) on one H100 at 8,192 tokens:
    vLLM 0.32 raises the block to 528 tokens and holds 2 state pages a request; from 0.33 FlashInfer's GDN prefill
    keeps a third, its checkpoint on a 64-token boundary: the block becomes 64 x ceil(528 / 64) = 576. A B200 keeps
    2 pages and says why."""

    def engine(*args: str) -> dict:
        return cli.json("kv", QWEN35_CONFIG, "--seq", "8192", *args)["memory"]["engine"]

    old, new = engine("--target", "h100", "--engine", "vllm@0.32"), engine("--target", "h100")
    assert (old["block_size"], new["block_size"]) == (528, 576)
    attention = lambda plan: -(-8192 // plan["block_size"])  # noqa: E731
    assert old["max_concurrency"] == pytest.approx(old["kv_blocks"] / (attention(old) + 3 * 2))
    assert new["max_concurrency"] == pytest.approx(new["kv_blocks"] / (attention(new) + 3 * 3))
    blackwell = engine("--target", "b200")
    assert blackwell["block_size"] == 528 and any("CUDA 13 runtime" in note for note in blackwell["notes"])


def test_an_attention_free_models_cache_is_refused_when_asked(cli):
    mamba = ("kv", "tests/fixtures/hf_configs/mamba-2.8b-hf.json", "--target", "h100", "--seq", "8192")
    refused = cli.run(*mamba, "--enable-prefix-caching")
    assert refused.exit_code == 2 and "attention-free model" in " ".join(refused.output.split())
    assert "mamba_cache_mode" not in cli.json(*mamba)["memory"]["engine"]


def test_a_hybrids_shared_prefix_not_served_says_why(cli):
    """SGLang's hybrid cache is not modelled, vLLM 0.27's is off by default: each says so where the TTFT is."""
    args = ("plan", QWEN35_CONFIG, "--target", "h200", "--tp", "1", "--isl", "8192", "--osl", "256", "--concurrency",
            "16", "--shared-prefix", "6000", "--closed-form")  # fmt: skip
    sglang = " ".join(cli.json(*args, "--engine", "sglang")["notes"])
    assert "not served here (SGLang's MambaRadixCache" in sglang
    old = " ".join(cli.json(*args, "--engine", "vllm@0.27")["notes"])
    assert "vLLM's cache of a hybrid is off (on by default from 0.28" in old
    assert "not served here" not in " ".join(cli.json(*args)["notes"])


def test_a_drafters_comparison_in_an_unpriced_mode_is_refused_in_one_line(cli, tmp_path):
    """vLLM 0.20 runs a Mamba family in align under speculative decoding but in 'all' without: the comparison's
    plain run is not priced, said in one line."""
    draft = tmp_path / "draft.json"
    draft.write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024, "intermediate_size":'
        ' 2048, "num_attention_heads": 8, "num_key_value_heads": 8, "num_hidden_layers": 2, "vocab_size": 131072,'
        ' "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 10000, "torch_dtype": "bfloat16"}'
    )
    refused = cli.run(
        "plan", NEMOTRON_CONFIG, "--target", "h200", "--tp", "1", "--isl", "8192", "--osl", "256", "--concurrency",
        "16", "--engine", "vllm@0.20", "--enable-prefix-caching", "--speculative-config",
        '{"method": "draft_model", "num_speculative_tokens": 2}', "--draft", str(draft), "--acceptance-length", "2",
    )  # fmt: skip
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and line.startswith("error: --speculative-config: the comparison without the drafter")


def _stage_plan(cli, config: str, *flags: str) -> dict:
    return cli.json(
        "plan", str(reference_hf_config(config)), "--target", "8xh200", "--isl", "16384", "--osl", "1024",
        "--engine", "vllm@0.33", "--tp", "1", "--pp", "8", *flags,
    )  # fmt: skip


def test_a_stage_of_a_hybrids_state_layers_is_priced_in_the_models_mode_not_refused(cli):
    """Trial 286 #2: granite-4.0-h-small at pp 8 puts only Mamba-2 layers on stage 0. vLLM decides the prefix cache
    on the whole model (a hybrid, on by default from 0.28), so that stage runs the align mode: 3 pages a request
    (2, and the Mamba-2 prefill checkpoint from 0.32), a third of the requests its pool holds with the cache off,
    where --enable-prefix-caching was refused as if the model were attention-free."""
    off = _stage_plan(cli, "granite-4.0-h-small", "--no-enable-prefix-caching")["memory"]["engine"]
    for flags in ((), ("--enable-prefix-caching",)):
        on = _stage_plan(cli, "granite-4.0-h-small", *flags)["memory"]["engine"]
        assert on["mamba_cache_mode"] == "align" and on["kv_tokens"] == 0
        assert on["available_kv_bytes"] == off["available_kv_bytes"]
        assert on["max_concurrency"] == pytest.approx(off["max_concurrency"] / 3, rel=1e-12)
        assert any(note.startswith("pipeline stage 0 holds only state layers of this hybrid") and "3 pages" in note
                   for note in on["notes"])  # fmt: skip
    assert "mamba_cache_mode" not in off


def test_an_attention_free_model_stays_refused_under_pipeline_stages(cli):
    result = cli.run(
        "plan", str(reference_hf_config("mamba-codestral-7b")), "--target", "8xh200", "--isl", "4096", "--osl", "256",
        "--engine", "vllm@0.33", "--tp", "1", "--pp", "8", "--enable-prefix-caching",
    )  # fmt: skip
    assert result.exit_code == 2 and "an attention-free model" in result.output


def test_an_attention_free_pool_counts_the_draft_tokens_pages(cli):
    """Review 288 #5: a Mamba model with a drafter holds 1 + k state pages a request from vLLM 0.15
    (``MambaSpec``'s speculative blocks), as a hybrid's state groups already did: its pool of states alone admits a
    (1 + k)-th of the requests one page each would; 327.6 at one page before, 81.9 at four."""
    args = ("plan", str(reference_hf_config("mamba-codestral-7b")), "--target", "h100", "--tp", "1", "--isl", "4096",
            "--osl", "256", "--closed-form")  # fmt: skip
    plain = cli.json(*args)["memory"]["engine"]
    drafted = cli.json(*args, "--draft", str(reference_hf_config("mamba-codestral-7b")), "--num-speculative-tokens",
                       "3", "--acceptance-length", "2")["memory"]["engine"]  # fmt: skip
    page = plain["available_kv_bytes"] / plain["max_concurrency"]  # one request's state, one page
    assert drafted["max_concurrency"] == pytest.approx(drafted["available_kv_bytes"] / (4 * page), rel=1e-9)
    assert any("4 pages each per request (one, 3 for the draft tokens)" in note for note in drafted["notes"])
    assert any("one page each per request" in note for note in plain["notes"])


def test_the_engine_line_names_the_limiting_stage(cli):
    """Review 288 #6: at pp 8 the engine line read "no KV tokens" for granite-4.0-h-small, whose stages 1, 3, 5 and 7
    hold 22M each: that line is the limiting stage's (stage 0, Mamba-2 layers alone), and says so."""
    result = cli.run(
        "plan", str(reference_hf_config("granite-4.0-h-small")), "--target", "8xh200", "--isl", "16384", "--osl",
        "1024", "--engine", "vllm@0.33", "--tp", "1", "--pp", "8",
    )  # fmt: skip
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "engine (stage 0, the one that admits fewest; each stage below): no KV tokens" in text
    # 22,170,441 before trial 371 #2 dropped the RoPE table vLLM never builds for Granite-4.0-H (its attention: NoPE)
    assert "stage 1 (layers 5-9): weights 7.3 GiB per GPU, 22,176,631 KV tokens" in text
