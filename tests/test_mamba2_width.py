"""A Mamba-2 mixer's width as transformers' configs read it: Falcon-H1's ``mamba_d_ssm`` absent is its class default
(1,024), not ``mamba_expand`` x ``hidden_size``, and heads x head dim that miss the width are refused, as
FalconH1Config and GraniteMoeHybridConfig refuse them."""

import json

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from tests.conftest import reference_hf_config

FALCON_H1 = json.loads(reference_hf_config("falcon-h1-7b").read_text())


def test_published_falcon_h1_reads_its_width():
    state = import_hf_config(FALCON_H1).model.recurrent
    # 24 heads x 128 = 3,072 = mamba_d_ssm; conv over x, B and C: 3,072 + 2 x 1 x 256
    assert (state.n_heads, state.head_dim, state.conv_dim) == (24, 128, 3_584)


def test_falcon_h1_without_mamba_d_ssm_is_refused_not_priced_at_expand_x_hidden():
    """Absent, FalconH1Config takes 1,024, which 24 heads of 128 miss: transformers raises; mha priced 6,144."""
    config = {key: value for key, value in FALCON_H1.items() if key != "mamba_d_ssm"}
    with pytest.raises(
        BadInputError, match=r"24 x 128 = 3,072\) must equal the Mamba width 1,024 \(mamba_d_ssm absent"
    ):
        import_hf_config(config)


def test_falcon_h1_without_mamba_d_ssm_takes_the_class_default():
    config = {key: value for key, value in FALCON_H1.items() if key != "mamba_d_ssm"}
    config.update(mamba_n_heads=8, mamba_d_head=128)  # 8 x 128 = 1,024: the default width
    imported = import_hf_config(config)
    assert imported.model.recurrent.conv_dim == 1_024 + 2 * 256
    assert any("mamba_d_ssm absent: 1,024, FalconH1Config's default" in note for note in imported.assumptions)


def test_falcon_h1_null_width_is_expand_x_hidden():
    config = {**FALCON_H1, "mamba_d_ssm": None, "mamba_n_heads": 48}  # 2 x 3,072 = 6,144 = 48 x 128
    assert import_hf_config(config).model.recurrent.conv_dim == 6_144 + 2 * 256


def test_heads_that_do_not_divide_an_auto_head_width_are_refused():
    config = {**FALCON_H1, "mamba_n_heads": 25, "mamba_d_head": "auto"}
    with pytest.raises(BadInputError, match=r"mamba_n_heads \(25\) must divide the Mamba width 3,072"):
        import_hf_config(config)
