"""Link data: the figures are the standards' line rates, one direction, per device."""

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.links import LINKS, NODE_LINKS, host_link, link, scale_out_link, scale_up_gbs
from mha_cli.core.targets import load_targets


def test_line_rates_are_the_standards():
    assert link("ib-ndr").gbs == 400 / 8  # 400 Gb/s port -> 50 GB/s
    assert link("ib-hdr").gbs == 200 / 8
    assert link("ib-xdr").gbs == 800 / 8
    assert link("roce-400").gbs == 400 / 8
    assert link("pcie5").gbs == pytest.approx(2 * link("pcie4").gbs)


def test_reference_servers():
    assert scale_out_link("h100-sxm").id == "ib-ndr"
    assert scale_out_link("a100-80gb").id == "ib-hdr"
    assert host_link("h200").id == "pcie5"
    assert host_link("gb200").gbs == 450.0
    assert host_link("rtx-4090").id == "pcie4"  # not a table row: the default


def test_every_named_target_exists():
    assert set(NODE_LINKS) <= set(load_targets())
    assert {host for host, _, _ in NODE_LINKS.values()} | {out for _, out, _ in NODE_LINKS.values()} <= set(LINKS)


def test_scale_up_is_half_the_bidirectional_figure():
    assert scale_up_gbs(load_targets()["h100-sxm"].interconnect_gbs) == 450.0
    assert scale_up_gbs(None) == link("pcie4").gbs


def test_unknown_link_is_one_line():
    with pytest.raises(BadInputError, match=r"unknown link 'ib-qdr'.*ib-ndr"):
        link("ib-qdr")
