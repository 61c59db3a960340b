"""``--profile`` on a torch command (verify, bench): a profile measured in another dtype or on another device is used
as asked, and the prediction's note says so (trial 303 #3: a bf16 profile priced an fp32 bench with no word)."""

from __future__ import annotations

import torch

from mha_cli.nn.profile_choice import active_profile


def test_a_profile_of_another_dtype_or_device_is_named_as_such():
    profile, how = active_profile("h100-sxm-prior", torch.device("cpu"), "fp32")
    assert (profile.dtype, profile.device) == ("bf16", "cuda")
    assert how == "--profile h100-sxm-prior, a profile of bf16 on cuda, for this run in fp32 on cpu"


def test_a_profile_of_the_runs_dtype_and_device_is_named_alone():
    _, how = active_profile("h100-sxm-prior", torch.device("cuda"), "bf16")
    assert how == "--profile h100-sxm-prior"
