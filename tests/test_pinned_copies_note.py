"""A pinned plan's (``--tp``) note on MoE replicas that each hold their own copy of the experts: ``mha plan
deepseek-v3 --target 72xgb300 --tp 8`` said "separate servers: the launch line is one of them, behind a load balancer"
when the pinned plan printed no launch line. It now prints them (newuser trial 242), written per replica as a
search's pick's: one group of nodes per replica."""


def test_the_copies_note_of_a_pinned_plan_and_its_launch_lines_per_replica(cli):
    result = cli.json("plan", "deepseek-v3", "--target", "72xgb300", "--tp", "8", "--closed-form")
    assert set(result["launch"]) == {"vllm", "vllm_workers", "sglang", "sglang_workers"}
    assert "one group of 2 nodes per replica" in result["launch_note"]
    copies = [note for note in result["notes"] if "own copy of the experts" in note]
    assert copies == [
        "the 9 replicas each hold their own copy of the experts (separate servers behind a load balancer, one per"
        " replica)"
    ]
