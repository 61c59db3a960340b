"""vLLM's host token tables, counted by its memory measure on an integrated GPU (core.engine.uma_token_tables)."""

from __future__ import annotations

from mha_cli.core.engine.uma_token_tables import uma_token_table_bytes


def test_v1_input_batch_tables_by_hand():
    """Log 613's server (vLLM 0.27.1, V1 runner, 256 sequences of 786,432): token_ids_cpu_tensor (int32) and
    is_token_ids_tensor (bool) are 256 x 786,432 x (4 + 1) B = 1,006,632,960 B = 0.9375 GiB."""
    got = uma_token_table_bytes(
        integrated=True, release=(0, 27), max_num_seqs=256, max_model_len=786432, v2_runner=False
    )
    assert got == 1_006_632_960 and got / 2**30 == 0.9375


def test_v2_request_state_table_by_hand():
    """Log 1501's server (Model Runner V2, 4 sequences of 40,960): all_token_ids, int32 pinned, 4 x 40,960 x 4 B."""
    got = uma_token_table_bytes(integrated=True, release=(0, 27), max_num_seqs=4, max_model_len=40960, v2_runner=True)
    assert got == 655_360


def test_nothing_on_a_discrete_gpu_or_before_the_release_read():
    """A discrete GPU's free memory leaves host RAM out; 0.10.0 has no integrated-GPU branch and 0.11-0.12 were not
    read; None (the latest release) charges the tables."""
    args = {"max_num_seqs": 256, "max_model_len": 8192, "v2_runner": False}
    assert uma_token_table_bytes(integrated=False, release=(0, 27), **args) == 0
    assert uma_token_table_bytes(integrated=True, release=(0, 12), **args) == 0
    assert uma_token_table_bytes(integrated=True, release=(0, 13), **args) == 256 * 8192 * 5
    assert uma_token_table_bytes(integrated=True, release=None, **args) == 256 * 8192 * 5
