"""TensorRT-LLM's C++ runtime buffers before the KV pool (core.engine.trtllm_buffers), counted by hand."""

from mha_cli.core.engine.trtllm_buffers import TrtllmBuffers, trtllm_buffers, vocab_size_padded


def test_vocab_padded_to_a_multiple_of_tp():
    # ModelConfig::getVocabSizePadded: ceil(vocab / tp) * tp
    assert vocab_size_padded(151_936, 1) == 151_936
    assert vocab_size_padded(32_001, 2) == 32_002
    assert vocab_size_padded(32_000, 3) == 32_001


def test_runtime_buffers_by_hand():
    # 8 sequences, beam 1, vocab 100, window 16 tokens:
    # logits 8 x 100 x 4 B = 3,200 B; cache indirection in + out 2 x 8 x 16 x 4 B = 1,024 B
    buffers = TrtllmBuffers(max_batch_size=8, beam=1, vocab_padded=100, max_attention_window=16)
    assert buffers.step_logits_bytes == 3_200
    assert buffers.cache_indirection_bytes == 1_024
    assert buffers.runtime_bytes == 4_224


def test_decoder_by_hand():
    # per logit: penalty runtime logits fp32 4 + occurrence workspace int32 4 + top-p sorted probs fp32 4
    # + sorted ids int32 4 + ids int32 4 = 20 B; 8 x 2 beams x 100 logits x 20 B = 32,000 B
    buffers = TrtllmBuffers(max_batch_size=8, beam=2, vocab_padded=100, max_attention_window=16)
    assert buffers.decoder_bytes == 32_000


def test_qwen_05b_at_trtllm_build_defaults():
    # Qwen2.5-0.5B (vocab 151,936), max_batch_size 2048, max_seq_len 32,768, tp 1 (engine_logs.yaml 206):
    # decoder 2048 x 151,936 x 20 B = 6,223,298,560 B (5.80 GiB; the log prints 5.76 GB, GiB units);
    # runtime buffers 2048 x 151,936 x 4 + 2 x 2048 x 32,768 x 4 = 1,244,659,712 + 536,870,912 B
    buffers = trtllm_buffers(max_batch_size=2048, vocab_size=151_936, max_seq_len=32_768, tp=1)
    assert buffers.decoder_bytes == 6_223_298_560
    assert buffers.runtime_bytes == 1_781_530_624
    assert buffers.log_lines() == [
        "[MemUsageChange] Allocated 1.66 GB GPU memory for runtime buffers.",
        "[MemUsageChange] Allocated 5.80 GB GPU memory for decoder.",
    ]


def test_buffers_scale_with_max_batch_size_not_load():
    small = trtllm_buffers(max_batch_size=64, vocab_size=128_256, max_seq_len=2048, tp=1)
    large = trtllm_buffers(max_batch_size=2048, vocab_size=128_256, max_seq_len=2048, tp=1)
    assert large.decoder_bytes == 32 * small.decoder_bytes
    assert large.runtime_bytes == 32 * small.runtime_bytes
