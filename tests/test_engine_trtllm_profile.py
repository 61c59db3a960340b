"""TensorRT-LLM's PyTorch backend's profiling run (core.engine.trtllm_profile), counted by hand from
KvCacheCreator._create_dummy_context_requests and LogitsProcessor.forward."""

from mha_cli.core.engine.trtllm_profile import dummy_prompt_lengths, trtllm_profile
from mha_cli.core.presets import get_preset

LLAMA_3_8B_LAYER = 2 * 4096 + 3 * 14_336
"""Widest layer's live values a token: residual and its normed copy, gate/up output and its activation."""


def test_dummy_prompts_make_up_max_num_tokens():
    # prompts of min(max_num_tokens, max_seq_len - 1) tokens until max_num_tokens are spent, the last one shorter
    assert dummy_prompt_lengths(max_num_tokens=8192, max_seq_len=8192) == [8191, 1]
    assert dummy_prompt_lengths(max_num_tokens=8192, max_seq_len=2048) == [2047, 2047, 2047, 2047, 4]
    assert dummy_prompt_lengths(max_num_tokens=8192, max_seq_len=32_768) == [8192]
    assert dummy_prompt_lengths(max_num_tokens=3, max_seq_len=1) == [1, 1, 1]  # max(1, max_seq_len - 1)


def test_llama_3_8b_at_the_defaults():
    # max_num_tokens 8192, max_batch_size 2048, 8,192-token requests: two requests (8,191 + 1 tokens);
    # forward 8192 x 2 B x 51,200 = 838,860,800 B; logits 2 rows x 128,256 x (2 + 4) B = 1,539,072 B
    profile = trtllm_profile(get_preset("llama-3-8b"), max_num_tokens=8192, max_seq_len=8192, max_batch_size=2048, tp=1)
    assert profile.step_prompts == [8191, 1] and profile.step_tokens == 8192
    assert profile.forward_bytes == 8192 * 2 * LLAMA_3_8B_LAYER == 838_860_800
    assert profile.logits_bytes == 2 * 128_256 * 6 == 1_539_072
    assert profile.peak_bytes == 838_860_800
    assert "8,192 tokens in 2 request(s)" in profile.how()


def test_max_batch_size_caps_the_step_and_logits_can_dominate():
    # 2-token requests: 8,192 one-token prompts, of which the step schedules max_batch_size 2048:
    # forward 2048 x 2 x 51,200 = 209,715,200 B; logits 2048 x 128,256 x 6 = 1,576,009,728 B, the larger
    profile = trtllm_profile(get_preset("llama-3-8b"), max_num_tokens=8192, max_seq_len=2, max_batch_size=2048, tp=1)
    assert len(profile.step_prompts) == 2048 and profile.step_tokens == 2048
    assert profile.forward_bytes == 209_715_200
    assert profile.peak_bytes == profile.logits_bytes == 1_576_009_728


def test_tensor_parallel_splits_the_forward_not_the_logits():
    # tp 2: gate/up 3 x 14,336 / 2 a rank; the LM head gathers the whole vocabulary on every rank
    model = get_preset("llama-3-8b")
    one = trtllm_profile(model, max_num_tokens=8192, max_seq_len=2, max_batch_size=2048, tp=1)
    two = trtllm_profile(model, max_num_tokens=8192, max_seq_len=2, max_batch_size=2048, tp=2)
    assert two.forward_bytes == 2048 * 2 * (2 * 4096 + 3 * 14_336 // 2)
    assert two.logits_bytes == one.logits_bytes
