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


def test_pipeline_stages_hold_a_runtime_buffer_a_micro_batch():
    """``TrtGptModelInflightBatching``: mNumBuffers = (ctxGenFusion ? 1 : 2) x micro-batches, micro-batches = pp at
    pp > 1 (ctxGenFusion: in-flight fused batching). Each ``RuntimeBuffers`` holds the logits on the last stage only
    and, at pp > 1, the hidden states [max_num_tokens, hidden] passed between stages; the decoder is the last stage's.
    8 sequences, vocab 100, window 16, pp 2, 64 tokens x hidden 32 x 2 B = 4,096 B of hidden states a micro-batch."""
    last = TrtllmBuffers(8, 1, 100, 16, pp=2, last_stage=True, hidden_states_bytes=64 * 32 * 2)
    assert last.step_logits_bytes == 2 * 3_200 and last.stage_hidden_bytes == 2 * 4_096
    assert last.runtime_bytes == 2 * 3_200 + 2 * 4_096 + 1_024 and last.decoder_bytes == 8 * 100 * 20
    first = last._replace(last_stage=False)
    assert first.step_logits_bytes == 0 and first.decoder_bytes == 0
    assert first.runtime_bytes == 2 * 4_096 + 1_024  # the cache indirection on every stage
    assert "not the last stage" in first.runtime_how() and "none before the last" in first.decoder_how()
    one = trtllm_buffers(max_batch_size=8, vocab_size=100, max_seq_len=16, tp=1, max_num_tokens=64, hidden_size=32)
    assert one.stage_hidden_bytes == 0 and one.runtime_bytes == 4_224  # pp 1: no hidden states, one copy


def test_draft_tokens_widen_the_step_logits_not_the_cache_indirection():
    """``RuntimeBuffers::setMaxBufferSizes``: numLogits = max_batch_size x max(1 + draft tokens, beam). 8 sequences at
    3 draft tokens: 32 rows of 100 fp32 logits; the cache indirection stays 8 sequences."""
    buffers = trtllm_buffers(max_batch_size=8, vocab_size=100, max_seq_len=16, tp=1, draft_tokens=3)
    assert buffers.logits_rows == 32 and buffers.step_logits_bytes == 32 * 100 * 4
    assert buffers.cache_indirection_bytes == 1_024 and buffers.decoder_bytes == 8 * 100 * 20
    assert "(1 + 3 draft tokens)" in buffers.runtime_how()


def test_the_serving_plan_prices_each_stage_and_the_draft_tokens():
    """``mha plan --pp 2`` on trtllm-cpp: the first stage has no logits or decoder, the last its pp copies of the
    logits; both the hidden states. Speculative decoding (k = 2) widens the logits (pp 1: refused with pp > 1)."""
    from mha_cli.core.cost.plan import plan_serving
    from mha_cli.core.cost.priors import datasheet_profile, prior_profile
    from mha_cli.core.deployment import merge_deployment
    from mha_cli.core.presets import get_preset
    from mha_cli.core.speculative import build_spec
    from mha_cli.core.targets import resolve_target

    model = get_preset("llama-3-8b")
    target = resolve_target("2xh100")
    deployment = merge_deployment(None, model=model, seq_len=4096, target=target.spec).model_copy(
        update={"engine": "trtllm", "engine_generation": "trtllm-cpp"}
    )
    profile, ceiling = prior_profile(target.target, "bf16"), datasheet_profile(target.target, "bf16")

    def plan(pp: int, tp: int, spec=None):
        chosen = deployment if spec is None else deployment.model_copy(update={"speculative": spec})
        return plan_serving(model, target, chosen, profile, ceiling, isl=1024, osl=1024, concurrency=1, tp=tp, pp=pp)

    def line(engine, label: str) -> int:
        return next(-item.bytes for item in engine.budget if item.label.startswith(label))

    staged = plan(2, 1)
    first, last = staged.stages[0], staged.stages[-1]
    assert first.kv_tokens_per_device > last.kv_tokens_per_device  # the last stage holds the logits and decoder
    engine = staged.memory.engine  # the limiting stage: the last
    rows, vocab, window = 2048, 128_256, 2048
    hidden = 2 * 8192 * 4096 * 2  # two micro-batches of max_num_tokens x d_model x bf16
    assert line(engine, "runtime buffers") == 2 * rows * vocab * 4 + hidden + 2 * rows * window * 4
    assert line(engine, "decoder") == rows * vocab * 20
    spec = build_spec(model, origin="", kind="preset", method="eagle", num_speculative_tokens=2, acceptance_length=2.0)
    widened = plan(1, 1, spec).memory.engine
    assert line(widened, "runtime buffers") == 3 * rows * vocab * 4 + 2 * rows * window * 4
