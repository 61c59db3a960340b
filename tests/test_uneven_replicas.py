"""Closed-loop users that do not divide over the replicas: the deployment's simulated totals count the replicas as
loaded (one user fewer on the others), not the busiest replica's figures times every replica."""

from __future__ import annotations

PLAN = ("plan", "llama-3-8b", "--target", "8xh100", "--tp", "1", "--engine", "vllm@0.11", "--num-prompts", "48")


def simulated(cli, *args: str) -> dict:
    return cli.json(*PLAN, *args)["simulated"]


def test_nine_users_on_eight_replicas_are_one_busy_replica_and_seven_of_one_user(cli):
    """9 users on 8 replicas: one replica of 2 users, seven of 1. It had printed 16 users' total (the 2-user replica x
    8) and a goodput above what 9 users can finish."""
    nine = simulated(cli, "--concurrency", "9", "--ttft-ms", "1000", "--itl-ms", "50")
    two = simulated(cli, "--concurrency", "16")  # every replica at 2 users, as the busiest of the 9-user run
    one = simulated(cli, "--concurrency", "8")  # every replica at 1 user, as the other seven
    assert nine["users_per_replica"] == 2 and nine["output_tokens_per_s"] == two["output_tokens_per_s"]
    expected = two["output_tokens_per_s"] + 7 * one["output_tokens_per_s"]
    assert abs(nine["deployment_output_tokens_per_s"] - expected) < 1e-6 * expected
    assert nine["deployment_output_tokens_per_s"] < 0.6 * two["deployment_output_tokens_per_s"]  # 9 users, not 16
    # goodput: no more requests/s than the 9 users finish (each one a request per end-to-end latency)
    assert nine["goodput_rps"] <= two["request_throughput"] + 7 * one["request_throughput"] + 1e-9


def test_users_that_divide_keep_the_busiest_replica_times_the_replicas(cli):
    sixteen = simulated(cli, "--concurrency", "16")
    assert sixteen["deployment_output_tokens_per_s"] == 8 * sixteen["output_tokens_per_s"]


def test_dp_attention_ranks_in_lockstep_count_the_busiest_ranks_rate_by_their_rows(cli):
    """DP attention's ranks step together: the seven 1-user ranks run the busiest's steps with half its rows."""
    run = cli.json("plan", "deepseek-v3", "--target", "8xh200", "--dp", "8", "--concurrency", "9", "--engine",
                   "vllm@0.11", "--num-prompts", "36")["simulated"]  # fmt: skip
    assert run["users_per_replica"] == 2
    expected = run["output_tokens_per_s"] * (1 + 7 / 2)
    assert abs(run["deployment_output_tokens_per_s"] - expected) < 1e-6 * expected


def test_num_prompts_under_a_rate_is_the_clients_total_split_over_the_replicas(cli):
    """``--rate 80 --num-prompts 80`` on 8 replicas sent 80 requests to every replica (640 in all), as a closed loop
    does not (10 each): 1,000 prompts at 320 req/s ran 50 s a replica, not 3 (found by newuser trial 239)."""
    args = ("plan", "llama-3.1-8b", "--target", "8xh100", "--tp", "1", "--num-prompts", "80")
    assert cli.json(*args, "--rate", "80")["simulated"]["requests"] == 10  # 80 / 8
    assert cli.json(*args, "--concurrency", "80")["simulated"]["requests"] == 10
