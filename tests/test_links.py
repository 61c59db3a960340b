"""Link data: the figures are the standards' line rates, one direction, per device."""

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.links import (
    ASSUMED,
    LINKS,
    NODE_LINKS,
    host_link,
    link,
    scale_out_basis,
    scale_out_link,
    scale_up_gbs,
)
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


PCIE_CARDS = ("h100-pcie", "h100-nvl", "a100-40gb-pcie", "a100-80gb-pcie")


@pytest.mark.parametrize("part", PCIE_CARDS)
def test_a_pcie_cards_network_is_named_an_assumption_not_a_dgx(part):
    """No reference server fixes a PCIe card's network card: the source says it assumes the DGX's port per GPU and
    cites no DGX guide; the card's own host link stays (PCIe 5.0 for H100, 4.0 for A100)."""
    basis = scale_out_basis(part)
    assert basis.startswith(ASSUMED) and "DGX" not in basis.split(";")[0] and "--inter-node-link" in basis
    assert host_link(part).id == ("pcie5" if part.startswith("h100") else "pcie4")


def test_sxm_parts_keep_their_reference_server_and_unknown_parts_say_assumed():
    assert scale_out_basis("h100-sxm").startswith("NVIDIA DGX H100") and ASSUMED not in scale_out_basis("h100-sxm")
    assert scale_out_basis("rtx-4090").startswith(ASSUMED)  # not a table row: one 100 GbE port, assumed


def test_the_plan_note_says_when_the_network_is_assumed(cli):
    def first_note(target: str, *extra: str) -> str:
        plan = cli.json("plan", "llama-3-8b", "--target", target, "--tp", "8", "--closed-form", *extra)
        return next(note for note in plan["notes"] if note.startswith("2 nodes of 8"))

    assert "(assumed, a PCIe card" in first_note("2x8xh100-pcie")
    assert "(NVIDIA DGX H100/H200 user guide" in first_note("2x8xh100-sxm")  # the control: a reference server
    assert "(--inter-node-link;" in first_note("2x8xh100-pcie", "--inter-node-link", "roce-200")
