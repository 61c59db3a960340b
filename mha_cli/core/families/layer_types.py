"""Layer kinds as config.json files name them (``layer_types``) and the sliding window, read once for every family.

Pure Python; ``core.hf_import`` and the family modules that derive kinds from their own fields use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.families import LayerKindsReader
    from mha_cli.core.schemas import LayerKind

KIND_OF_LAYER_TYPE: dict[str, LayerKind] = {
    "full_attention": "global", "attention": "global", "hybrid": "global", "indexed_attention": "global",
    "sliding_attention": "local", "hybrid_sliding": "local", "chunked_attention": "chunked",
    "linear_attention": "linear", "mamba": "linear", "conv": "linear",
}  # fmt: skip
"""transformers' ``layer_types`` names (``hybrid``: attention beside a state mixer, Falcon-H1)."""
MIXER_LAYER_TYPES = {"hybrid", "hybrid_sliding", "linear_attention", "mamba", "conv"}
"""Layer types that keep a fixed state: a family that lists them must have its mixer read (``recurrent``)."""


def kinds_of_layer_types(r: ConfigReader, types: Any, n_layers: int) -> list[LayerKind]:
    """One kind per layer from a ``layer_types`` list, checked: a list, one entry per layer, known names."""
    if not isinstance(types, list):
        raise BadInputError(f"{r.origin}: layer_types must be a list with one layer type per layer")
    if len(types) != n_layers:
        raise BadInputError(
            f"{r.origin}: layer_types has {len(types)} entries but num_hidden_layers is {n_layers}: give one entry per"
            " layer"
        )
    unknown = sorted({str(t) for t in types} - set(KIND_OF_LAYER_TYPE))
    if unknown:
        raise BadInputError(f"{r.origin}: unknown layer type(s) {', '.join(unknown)} in layer_types")
    return [KIND_OF_LAYER_TYPE[str(t)] for t in types]


def sliding_window(r: ConfigReader, *keys: str) -> int | None:
    """The window of local layers (``sliding_window``, else the family's own ``keys``); None when off or absent."""
    switch = r.get("use_sliding_window")
    if switch is not None and not switch:  # false, or 0 as transformers' truth test reads it (review 301 #6)
        return None
    for key in ("sliding_window", *keys):
        if r.get(key):
            return r.count("sliding window", key)
    return None


def class_default_kinds(is_full: Callable[[int, int], bool], class_name: str, rule: str) -> LayerKindsReader:
    """The layer kinds a family's config class derives when config.json has no ``layer_types`` (its
    ``__post_init__``): full attention where ``is_full(i, n_layers)``, else sliding; ``rule`` says which in words,
    in the assumption the import lists. Review 341 #2: without it every layer of such a config slid by the window
    (Mellum's class makes every layer full, Flint's its first two, every fourth from 1 and its last)."""

    def kinds(r: ConfigReader, n_layers: int) -> list[LayerKind]:
        derived: list[LayerKind] = ["global" if is_full(i, n_layers) else "local" for i in range(n_layers)]
        return r.assume(derived, f"layer_types absent: {rule}, as {class_name} derives them")

    return kinds
