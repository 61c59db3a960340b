"""Rotary position embedding (RoPE), rotate-half convention (Llama / Hugging Face layout).

The first and second halves of the rotated part of a vector form (real, imag) pairs; pair i turns
by position * inv_freq[i], with inv_freq[i] = theta^(-2i / rotary_dim) before any scaling. Only the
first ``partial_rotary_factor * head_dim`` values rotate; the rest pass through unchanged.

Scalings (``RopeSpec.scaling``), all acting on the frequencies:
- linear: inv_freq / factor;
- llama3 (Llama 3.1): wavelengths longer than original / low_freq_factor are divided by factor, those
  shorter than original / high_freq_factor are kept, and the band between is interpolated smoothly;
- yarn (YaRN, Peng et al. 2023): dimension i blends the interpolated (inv_freq / factor) and the
  original frequency with a linear ramp between the dimensions that turn beta_fast and beta_slow
  times over the original context; cos and sin are multiplied by an attention factor,
  0.1 ln(factor) + 1 by default, or the ratio of that form with ``mscale`` and ``mscale_all_dim``;
- dynamic (NTK-aware): unscaled. transformers rescales the base only once a sequence passes the trained context
  (``dynamic_rope_update``), so within it, where verify runs, the frequencies are the plain ones.

``rope_angles`` / ``apply_rope`` (plain RoPE over the whole width) serve MLA's decoupled key.
"""

from __future__ import annotations

import math

import torch

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import RopeScaling, RopeSpec


def rope_angles(positions: torch.Tensor, width: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (s, width) for integer ``positions`` (s,); ``width`` must be even."""
    if width % 2:
        raise ValueError(f"RoPE width ({width}) must be even")
    inv_freq = base ** (-torch.arange(0, width, 2, device=positions.device, dtype=torch.float32) / width)  # (w/2,)
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # (s, w/2)
    angles = torch.cat([angles, angles], dim=-1)  # (s, w)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate x (..., s, w) by its positions (s,); returns the same shape and dtype."""
    width = x.shape[-1]
    if width == 0:
        return x
    cos, sin = rope_angles(positions, width, base)  # (s, w) each
    return rotate(x, cos, sin)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x * cos + rotate_half(x) * sin over the first ``cos.shape[-1]`` values of x (..., s, h_d); the rest pass.

    cos, sin: (s, r) float32, r <= h_d, or (b, s, r) for positions that differ by row (a padded batch).
    Computed in float32, returned in x's dtype.
    """
    width = cos.shape[-1]
    if width == 0:
        return x
    if cos.dim() == 3 and x.dim() == 4:  # per-row positions over (b, n, s, h_d): broadcast over the heads
        cos, sin = cos[:, None], sin[:, None]  # (b, 1, s, r)
    rotary, passthrough = x[..., :width].float(), x[..., width:]  # (..., s, r), (..., s, h_d - r)
    first, second = rotary.chunk(2, dim=-1)  # (..., s, r/2) each
    turned = torch.cat([-second, first], dim=-1)  # (..., s, r)
    rotated = (rotary * cos + turned * sin).to(x.dtype)  # (..., s, r)
    return torch.cat([rotated, passthrough], dim=-1) if passthrough.shape[-1] else rotated  # (..., s, h_d)


def as_halves(x: torch.Tensor, width: int) -> torch.Tensor:
    """x (..., h_d) with its first ``width`` values regrouped from interleaved pairs (x0, x1), (x2, x3)... into
    halves (x0, x2, ...; x1, x3, ...), so rotate-half rotates each pair; the rest pass. Queries and keys regrouped
    alike keep every score (the same permutation of both)."""
    rotary, rest = x[..., :width], x[..., width:]
    return torch.cat([rotary[..., 0::2], rotary[..., 1::2], rest], dim=-1)  # (..., h_d)


def rotary_dim(rope: RopeSpec, head_dim: int) -> int:
    """Values of a head that rotate: int(head_dim * partial_rotary_factor), as transformers rounds it."""
    width = int(head_dim * rope.partial_rotary_factor)
    if width % 2:  # a config kv and check price (no size depends on it), which no model can run
        raise BadInputError(
            f"attention.head_dim {head_dim} x rope.partial_rotary_factor {rope.partial_rotary_factor} rotates"
            f" {width} values a head: RoPE turns them in pairs, so the width must be even (transformers' rotate_half"
            " cannot split it either): change head_dim or partial_rotary_factor"
        )
    return width


def inverse_frequencies(rope: RopeSpec, width: int) -> tuple[torch.Tensor, float]:
    """(inv_freq (width/2,) float32 in radians per position, attention factor scaling cos and sin)."""
    exponents = torch.arange(0, width, 2, dtype=torch.int64).to(torch.float32) / width  # (w/2,)
    inv_freq = 1.0 / (rope.theta**exponents)  # (w/2,)
    scaling = rope.scaling
    if scaling is None or scaling.type == "dynamic":  # dynamic: rescaled only past the trained context
        return inv_freq, 1.0
    if scaling.type == "linear":
        return inv_freq / scaling.factor, 1.0
    if scaling.type == "llama3":
        return _llama3(inv_freq, scaling), 1.0
    return _yarn(rope.theta, width, scaling)


def _llama3(inv_freq: torch.Tensor, scaling: RopeScaling) -> torch.Tensor:
    """Llama 3.1's band-wise division of the frequencies (see the module docstring)."""
    assert scaling.original_max_position_embeddings is not None
    original = scaling.original_max_position_embeddings
    long_wavelength = original / scaling.low_freq_factor  # longer than this: divided by factor
    short_wavelength = original / scaling.high_freq_factor  # shorter than this: kept
    wavelength = 2 * math.pi / inv_freq  # (w/2,)
    divided = inv_freq / scaling.factor  # (w/2,)
    scaled = torch.where(wavelength > long_wavelength, divided, inv_freq)  # (w/2,)
    if scaling.high_freq_factor == scaling.low_freq_factor:  # Llama 4: no band between, nothing to blend
        return scaled
    # 0 at the long end of the band, 1 at the short end.
    smooth = (original / wavelength - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor)
    blended = (1 - smooth) * divided + smooth * inv_freq  # (w/2,)
    in_band = (wavelength >= short_wavelength) & (wavelength <= long_wavelength)  # (w/2,)
    return torch.where(in_band, blended, scaled)  # (w/2,)


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def yarn_attention_factor(scaling: RopeScaling) -> float:
    """YaRN's scale of cos and sin: explicit, or from factor (and DeepSeek's mscale / mscale_all_dim)."""
    if scaling.attention_factor is not None:
        return scaling.attention_factor
    if scaling.mscale and scaling.mscale_all_dim:
        return _yarn_mscale(scaling.factor, scaling.mscale) / _yarn_mscale(scaling.factor, scaling.mscale_all_dim)
    return _yarn_mscale(scaling.factor)


def _yarn(theta: float, width: int, scaling: RopeScaling) -> tuple[torch.Tensor, float]:
    """YaRN frequencies and attention factor (see the module docstring)."""
    assert scaling.original_max_position_embeddings is not None
    original = scaling.original_max_position_embeddings

    def dim_turning(rotations: float) -> float:
        """The (fractional) dimension index whose frequency turns ``rotations`` times over the original context."""
        return width * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = dim_turning(scaling.beta_fast), dim_turning(scaling.beta_slow)
    if scaling.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, width - 1)
    if low == high:
        high += 0.001  # a one-point ramp would divide by zero
    ramp = ((torch.arange(width // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)  # (w/2,)
    original_freq = 1.0 / (theta ** (torch.arange(0, width, 2, dtype=torch.float32) / width))  # (w/2,)
    interpolated = original_freq / scaling.factor  # (w/2,)
    inv_freq = interpolated * ramp + original_freq * (1 - ramp)  # (w/2,)
    return inv_freq, yarn_attention_factor(scaling)


class RotaryEmbedding:
    """cos and sin for one ``RopeSpec`` and head width; no parameters, nothing in the state dict.

    The frequencies are computed once, on the CPU, and copied to each device on first use, so a
    model built on the meta device (or moved later) still gets real values.
    """

    def __init__(self, rope: RopeSpec, head_dim: int) -> None:
        self.rope = rope
        self.head_dim = head_dim
        self.width = rotary_dim(rope, head_dim)
        self.inv_freq, self.attention_factor = inverse_frequencies(rope, self.width)  # (r/2,), float
        self._on_device: dict[torch.device, torch.Tensor] = {}

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin (s, r) float32 for integer ``positions`` (s,), times the attention factor; (b, s, r) for
        positions (b, s) (a padded batch, one row of positions per prompt)."""
        device = positions.device
        if device not in self._on_device:
            self._on_device[device] = self.inv_freq.to(device)
        angles = positions.to(torch.float32)[..., None] * self._on_device[device]  # (..., s, r/2)
        angles = torch.cat([angles, angles], dim=-1)  # (..., s, r)
        return angles.cos() * self.attention_factor, angles.sin() * self.attention_factor
