"""Plain PyTorch reference mixers for the fixed-state layers ``mha kv`` prices: Gated DeltaNet, Mamba-1,
Mamba-2, lightning attention and KDA.

Naive and readable (token-by-token recurrences): they exist so the state a layer keeps can be measured
(``MixerState.nbytes``) and compared with ``mha_cli.core.kv.state_bytes_per_layer``. Imported only by the torch ring.

>>> from mha_cli.nn.mixers import Mamba2
>>> mixer = Mamba2(64, n_heads=4, head_dim=32, d_state=16, n_groups=1, conv_kernel=4)
>>> state = mixer.new_state(batch=1)
>>> y = mixer(x, state)  # prefill [1, seq, 64]; then mixer(x_next, state) for each new token
"""

from mha_cli.nn.mixers.build import BUILT_KINDS, build_mixer
from mha_cli.nn.mixers.gated_deltanet import GatedDeltaNet, gated_delta_rule
from mha_cli.nn.mixers.gated_norm import GatedRMSNorm
from mha_cli.nn.mixers.kda import KimiDeltaAttention
from mha_cli.nn.mixers.lightning import LightningAttention, lightning_recurrence
from mha_cli.nn.mixers.mamba1 import Mamba1, selective_scan
from mha_cli.nn.mixers.mamba2 import Mamba2, ssd_recurrence
from mha_cli.nn.mixers.short_conv import ShortConv
from mha_cli.nn.mixers.state import MixerState

__all__ = [
    "BUILT_KINDS",
    "GatedDeltaNet",
    "GatedRMSNorm",
    "KimiDeltaAttention",
    "LightningAttention",
    "Mamba1",
    "Mamba2",
    "MixerState",
    "ShortConv",
    "build_mixer",
    "gated_delta_rule",
    "lightning_recurrence",
    "selective_scan",
    "ssd_recurrence",
]
