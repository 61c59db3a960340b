"""The testability hook (rule MHA050): a scaled copy of a design must solve the induction task.

``run_hook(spec, layers=2, seed=0, device="cpu")`` trains an N-layer copy of the design's attention
and a 1-layer control on random sequences with a repeated segment (A B ... A -> B) and returns a
``HookResult``. ``mha verify CONFIG --hook`` runs it. The torch parts are in ``run`` and ``task``;
``sizes``, ``scale`` and ``result`` are pure Python, so importing this package does not import torch.
"""

from mha_cli.hook.result import HookResult
from mha_cli.hook.scale import ScaledCopy, scaled_copy
from mha_cli.hook.sizes import DEFAULT_SIZE, QUICK_SIZE, SIZES, HookSize

__all__ = ["DEFAULT_SIZE", "QUICK_SIZE", "SIZES", "HookResult", "HookSize", "ScaledCopy", "scaled_copy"]
