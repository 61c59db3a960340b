"""A pinned plan (``--tp``) prints no launch line, so its note on MoE replicas that each hold their own copy of the
experts must not point at one: ``mha plan deepseek-v3 --target 72xgb300 --tp 8`` said "separate servers: the launch
line is one of them, behind a load balancer" with no launch line anywhere in the output or its JSON."""


def test_the_copies_note_of_a_pinned_plan_names_no_launch_line(cli):
    result = cli.json("plan", "deepseek-v3", "--target", "72xgb300", "--tp", "8", "--closed-form")
    assert "launch" not in result
    copies = [note for note in result["notes"] if "own copy of the experts" in note]
    assert copies == [
        "the 9 replicas each hold their own copy of the experts (separate servers behind a load balancer, one per"
        " replica)"
    ]
    assert not any("launch line" in note for note in result["notes"])
