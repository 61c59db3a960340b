"""The launcher's pieces without starting ranks: the rank environment, and the one line a failure becomes."""

from __future__ import annotations

import json

import pytest

from mha_cli.parallel.faults import FAULT_ENV, InjectedFault, inject_fault
from mha_cli.parallel.group import RankEnv, backend_for
from mha_cli.parallel.launch import ERROR_FILE, Launch, _failure, mark_stage


def test_rank_env_round_trips_torchruns_variables():
    place = RankEnv(rank=2, world_size=4, local_rank=2, master_addr="127.0.0.1", master_port=29511)
    assert place.as_environ() == {"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "MASTER_ADDR": "127.0.0.1",
                                  "MASTER_PORT": "29511"}  # fmt: skip
    assert RankEnv.from_environ(place.as_environ()) == place
    assert RankEnv.from_environ({}) == RankEnv(0, 1, 0, "127.0.0.1", 29500)  # started alone: rank 0 of 1
    with pytest.raises(ValueError, match="RANK \\(4\\) must lie in \\[0, WORLD_SIZE=4\\)"):
        RankEnv.from_environ({"RANK": "4", "WORLD_SIZE": "4"})
    with pytest.raises(ValueError, match="WORLD_SIZE='two' is not a whole number"):
        RankEnv.from_environ({"WORLD_SIZE": "two"})
    assert (backend_for("cpu"), backend_for("cuda")) == ("gloo", "nccl")


def test_the_failure_names_the_rank_that_caused_it(tmp_path):
    """Rank 0 failed too, but only because its peer went away: the line names rank 1 and its own error."""
    (tmp_path / ERROR_FILE.format(rank=0)).write_text(
        json.dumps({"message": "DistBackendError: Connection closed by peer", "exit_code": 1, "collateral": True})
    )
    (tmp_path / ERROR_FILE.format(rank=1)).write_text(
        json.dumps({"message": "out of memory: RuntimeError: ...", "exit_code": 3, "collateral": False})
    )
    error = _failure(Launch(tmp_path), [0, 1], [1, 3])
    assert error.message.startswith(
        "parallel run stopped: rank 1 failed (exit code 3) at stage start-up: out of memory"
    )
    assert error.exit_code == 3  # the rank's own documented code


def test_a_rank_killed_without_a_word(tmp_path):
    mark_stage(tmp_path, 1, "decode")
    error = _failure(Launch(tmp_path), [1], [None, -9])
    assert "rank 1 failed (killed by SIGKILL) at stage 'decode': no error reported (killed or crashed)" in error.message
    assert "likely the kernel's out-of-memory killer" in error.message  # which rank, where, and the likely cause
    assert error.exit_code == 1


def test_an_abort_names_its_likely_cause(tmp_path):
    mark_stage(tmp_path, 3, "gather")
    error = _failure(Launch(tmp_path), [3], [None, None, None, -6])
    assert "rank 3 failed (killed by SIGABRT) at stage 'gather'" in error.message
    assert "a collective torn down while a peer still used it" in error.message


def test_faults_act_only_on_their_rank():
    inject_fault(0, {FAULT_ENV: "1:raise"})  # another rank's fault: nothing happens
    inject_fault(1, {})
    inject_fault(1, {FAULT_ENV: "1:corrupt"})  # not a stop: the tp check acts on it
    with pytest.raises(InjectedFault, match="injected fault on rank 1"):
        inject_fault(1, {FAULT_ENV: "1:raise"})
    with pytest.raises(ValueError, match="expected RANK:KIND"):
        inject_fault(1, {FAULT_ENV: "one:crash"})
