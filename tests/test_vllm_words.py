"""vLLM's start-up lines as each release words and rounds them (``core.engine.vllm_words``), read in the wheels: GiB
``%.2f`` up to 0.13, ``round(b / GiB, 2)`` from 0.14; "models's" up to 0.21; the auto-fit line reworded in 0.32; V0's
own error for a pool under one request."""

from mha_cli.core.engine.vllm_words import auto_fit_line, too_short_error, vllm_gib

GIB = 2**30


def test_gib_is_rounded_from_0_14_and_fixed_before():
    assert [vllm_gib(b, (0, 14, 0, 0)) for b in (5 * GIB, int(4.9 * GIB), int(-0.5 * GIB))] == ["5.0", "4.9", "-0.5"]
    assert [vllm_gib(b, (0, 13, 0, 0)) for b in (5 * GIB, int(4.9 * GIB))] == ["5.00", "4.90"]
    assert vllm_gib(5 * GIB, None) == "5.0"  # None: the newest modelled


def test_the_error_reads_models_s_up_to_0_21():
    old = too_short_error(131072, 16 * GIB, 3 * GIB, 28784, (0, 21, 0, 0))
    new = too_short_error(131072, 16 * GIB, 3 * GIB, 0, (0, 22, 0, 0))
    assert old == (
        "ValueError: To serve at least one request with the models's max seq len (131072), (16.0 GiB KV cache is"
        " needed, which is larger than the available KV cache memory (3.0 GiB). Based on the available memory, the"
        " estimated maximum model length is 28784."
    )
    assert "the model's max seq len" in new and new.endswith("(3.0 GiB).")  # an estimate of 0 is left out


def test_the_auto_fit_line_is_reworded_in_0_32():
    assert auto_fit_line(131072, 40576, 5 * GIB, (0, 31, 0, 0)) == (
        "Auto-fit max_model_len: reduced from 131072 to 40576 to fit in available GPU memory (5.0 GiB available for"
        " KV cache)"
    )
    assert auto_fit_line(131072, 40576, 5 * GIB, (0, 32, 0, 0), "CPU") == (
        "Auto-fit max_model_len: reduced from 131072 to 40576 to fit in available KV cache memory (5.0 GiB CPU)"
    )


def test_v0_names_the_tokens_its_blocks_hold(cli):
    """vLLM V0 (0.7.3) refuses in its own words (``raise_if_cache_size_invalid``): the model's max seq len against
    the tokens its blocks hold; V1's "To serve at least one request" was printed for it. Llama-3-70B on 2 x H100 at
    32K: a whole number of 16-token blocks, under 32,768."""
    engine = cli.json("kv", "llama-3-70b", "--target", "2xh100", "--seq", "32k", "--engine", "vllm@0.7")["engine"]
    held = engine["kv_blocks"] * engine["block_size"]
    assert not engine["starts"] and 0 < held < 32768 and engine["kv_tokens"] == held
    assert engine["refusal"] == (
        f"ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored"
        f" in KV cache ({held})."
    )
