"""A config.json without ``layer_types`` is read with the layer kinds its transformers config class derives then
(review 341 #2: Mellum's and Laguna's classes make every layer full, Flint's, Beam's, CWM's, Granite-SWA's and
Kolibri's a pattern of full and sliding layers, MiniMax's alternate softmax and lightning; mha slid every layer by the
window, or read MiniMax's lightning layers as attention). Every registered family transformers knows is built with
8 layers and a window of 64, its ``layer_types`` dropped from the config.json, and read back."""

from __future__ import annotations

import warnings

import pytest
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
from transformers.utils import logging as transformers_logging

from mha_cli.core.families import all_families
from mha_cli.core.hf_import import import_hf_config

KINDS = {"full_attention": "global", "sliding_attention": "local", "linear_attention": "linear"}


def _derived(model_type: str) -> tuple[dict, list[str]] | None:
    """The family's config.json at 8 layers and a window of 64 without its layer_types, and the kinds its class
    derives; None where the class derives none of these kinds (or cannot be built so small)."""
    transformers_logging.set_verbosity_error()
    defaults = AutoConfig.for_model(model_type).to_dict()
    if "text_config" in defaults:
        return None
    small = {key: 8 for key in ("num_hidden_layers", "n_layer", "num_layers") if key in defaults}
    small |= {"sliding_window": 64} if "sliding_window" in defaults else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = AutoConfig.for_model(model_type, **small)
    except Exception:  # GPT-Neo's attention_types must match its layers: built elsewhere
        return None
    types = getattr(config, "layer_types", None)
    if not types or not set(types) <= set(KINDS):
        return None
    written = config.to_dict()
    written.pop("layer_types", None)  # (a property of some classes: not written at all)
    return written, [KINDS[t] for t in types]


FAMILIES = sorted(
    f.name for f in all_families() if f.name in CONFIG_MAPPING_NAMES and not f.attention_free and not f.refused
)


@pytest.mark.parametrize("model_type", FAMILIES)
def test_a_config_without_layer_types_reads_its_class_defaults(model_type):
    derived = _derived(model_type)
    if derived is None:
        return
    written, kinds = derived
    model = import_hf_config(written).model
    read = {"global": model.n_global_layers, "local": model.n_local_layers, "linear": model.n_state_layers}
    assert read == {kind: kinds.count(kind) for kind in read}, (model_type, kinds)


def test_the_families_that_slid_every_layer_are_among_those_checked():
    """The control: the sweep reaches the families the review found (a derived pattern with windows)."""
    checked = {name for name in FAMILIES if _derived(name) is not None}
    assert {"mellum", "laguna", "flint", "beam", "cwm", "granite_swa", "kolibri1", "minimax"} <= checked


def test_a_window_of_zero_is_no_refusal_where_the_class_slides_no_layer():
    """Review 341 #2: Mellum's class makes every layer full, so its window of 0 slides nothing and is not refused
    (the refusal is for families whose layers slide by the window: tests/test_family_windows.py)."""
    written, kinds = _derived("mellum")
    assert set(kinds) == {"global"}
    model = import_hf_config({**written, "sliding_window": 0}).model
    assert (model.n_global_layers, model.n_local_layers) == (8, 0)
