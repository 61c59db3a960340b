"""The closed form's prompt steps (``core.cost.serving.others_prompts``): the other requests' prompts a step computes
beside the decodes are whole prompts side by side, each its own sequence (vLLM V1's ``Scheduler.schedule`` admits
waiting requests one after another while the token budget lasts), not one sequence as long as the budget left.
Counts by hand."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.cost.serving import ServingCase, others_prompts, predict_serving
from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.cost.work import causal_pairs_after, decode_shape, prefill_shape
from mha_cli.core.presets import get_preset
from mha_cli.core.targets import load_targets


def _pairs(shapes) -> int:
    return sum(s.sequences * causal_pairs_after(s.new_tokens, s.context, None) for s in shapes)


def test_a_steps_budget_holds_whole_prompts_and_a_chunk_of_the_next():
    # 7,168 tokens of 2,048-token prompts: 3 whole (6,144) and 1,024 of the fourth
    assert others_prompts(7168, 2048) == [prefill_shape(2048, sequences=3), prefill_shape(1024)]
    # each prompt attends to itself: 3 x 2,048 x 2,049 / 2 + 1,024 x 1,025 / 2 query-key pairs
    assert _pairs(others_prompts(7168, 2048)) == 3 * 2_098_176 + 524_800 == 6_819_328
    # one sequence of 7,168 tokens would pair every token with all before it: 7,168 x 7,169 / 2
    assert causal_pairs_after(7168, 0, None) == 25_693_696


def test_a_prompt_longer_than_the_budget_left_is_one_chunk_at_its_chunks_mean_context():
    # a 2,048-token prompt in chunks of 1,000 starts them at 0 to 1,048 (prompt - chunk): the chunk a step
    # carries is priced after (2,048 - 1,000) // 2 = 524 cached tokens, not as the prompt's first chunk
    assert others_prompts(1000, 2048) == [prefill_shape(1000, context=524)]
    assert others_prompts(1000, 2048, cached=512) == [prefill_shape(1000, context=1036)]


def test_the_chunks_of_a_long_prompt_pair_as_the_whole_prompt_does():
    # a 131,072-token prompt in 16 chunks of 8,192 (offsets 0, 8,192, ..., 122,880: mean 61,440); the mean chunk's
    # pairs, 8,192 x 61,440 + 8,192 x 8,193 / 2, times 16 are the prompt's own 131,072 x 131,073 / 2
    assert others_prompts(8192, 131_072) == [prefill_shape(8192, context=61_440)]
    assert 16 * _pairs(others_prompts(8192, 131_072)) == 131_072 * 131_073 // 2 == 8_590_000_128
    # the first chunk alone (context 0) would count 16 x 33,558,528 = 536,936,448: 16 times too few
    assert 16 * causal_pairs_after(8192, 0, None) == 536_936_448


def test_the_itl_prices_a_long_prompts_stall_at_its_chunks_mean_context():
    # 8 users of 32,768 + 256 tokens on one H100 with an 8,192-token budget: 8 decodes leave 8,184 tokens a step,
    # so each step carries a chunk of another prompt after (32,768 - 8,184) // 2 = 12,292 cached tokens; the 7
    # others' 229,376 prompt tokens fill ceil(229,376 / 8,184) = 29 of the 256 steps
    model, target = get_preset("llama-3-8b"), load_targets()["h100-sxm"]
    case = ServingCase(model, 32_768, 256, 8, admitted_per_replica=8, chunk_tokens=8192)
    profile = prior_profile(target)
    result = predict_serving(case, profile, datasheet_profile(target))
    stepper = Stepper(case, profile)
    context = 32_768 + 128
    decode = stepper.step(decode_shape(8, context)).seconds
    stall = stepper.step(prefill_shape(8184, context=12_292), decode_shape(8, context)).seconds
    assert result.itl_ms == pytest.approx(((256 - 29) * decode + 29 * stall) / 256 * 1e3)


def test_whole_prompts_read_the_cached_prefix_and_an_exact_fit_leaves_no_chunk():
    assert others_prompts(4096, 2048, cached=512) == [prefill_shape(2048, sequences=2, context=512)]
    # 2 x (2,048 x 512 + 2,048 x 2,049 / 2)
    assert _pairs(others_prompts(4096, 2048, cached=512)) == 2 * (1_048_576 + 2_098_176)


def test_the_itl_prices_the_prompt_steps_as_whole_prompts():
    # 64 users of 2,048 + 256 tokens on one H100 with a 16,384-token budget: 64 decodes leave 16,320 tokens a step,
    # 7 whole prompts (14,336) and 1,984 tokens of the next; the 63 others' 129,024 prompt tokens fill 8 of the 256 steps
    model, target = get_preset("llama-3-8b"), load_targets()["h100-sxm"]
    case = ServingCase(model, 2048, 256, 64, admitted_per_replica=64, chunk_tokens=16_384)
    profile = prior_profile(target)
    result = predict_serving(case, profile, datasheet_profile(target))
    stepper = Stepper(case, profile)
    context = 2048 + 128
    decode = stepper.step(decode_shape(64, context)).seconds
    stall = stepper.step(prefill_shape(2048, sequences=7), prefill_shape(1984), decode_shape(64, context)).seconds
    assert result.itl_ms == pytest.approx(((256 - 8) * decode + 8 * stall) / 256 * 1e3)


def test_under_pipeline_parallelism_the_prompts_share_every_micro_batchs_steps():
    # pp 2: 64 users run as 2 micro-batches of 32, each step scheduled with its own 16,384-token budget (the
    # engines' pipeline loops, core.cost.serving.micro_batch_steps); 32 decodes leave 16,352 tokens a step, so the
    # 63 others' 129,024 prompt tokens fill 8 micro-batch steps (7 whole prompts and 2,016 tokens each) of the
    # 2 x 256 that run over one request's 256 steps: 4 of its 256 steps' worth
    model, target = get_preset("llama-3-8b"), load_targets()["h100-sxm"]
    case = ServingCase(model, 2048, 256, 64, pp=2, admitted_per_replica=64, chunk_tokens=16_384)
    profile = prior_profile(target)
    result = predict_serving(case, profile, datasheet_profile(target))
    stepper = Stepper(case, profile)
    context = 2048 + 128
    decode = stepper.step(decode_shape(32, context)).seconds
    stall = stepper.step(prefill_shape(2048, sequences=7), prefill_shape(2016), decode_shape(32, context)).seconds
    assert result.itl_ms == pytest.approx(((256 - 4) * decode + 4 * stall) / 256 * 1e3)


def test_pipeline_stages_keep_up_with_more_users_prompts():
    # what a 16,384-token budget keeps up with at 2,048 in / 256 out: (256 x 16,384 + 2,048) // 2,304 = 1,821
    # requests; with 2 micro-batches in flight, twice the budget a request step: (256 x 32,768 + 2,048) // 2,304
    model, target = get_preset("llama-3-8b"), load_targets()["h100-sxm"]
    profile, ceiling = prior_profile(target), datasheet_profile(target)
    for pp, running in ((1, 1821), (2, 3641)):
        case = ServingCase(model, 2048, 256, 4000, pp=pp, admitted_per_replica=4000, chunk_tokens=16_384)
        assert predict_serving(case, profile, ceiling).running_per_replica == running
