"""Print ``mha_cli/core/families/field_defaults.py``'s table: each family's transformers config-class defaults for the
fields that change a priced figure (``FIGURE_FIELDS``), read off the installed transformers' dataclass fields (their
declared defaults, not values ``__post_init__`` derives from other fields, as Llama's ``head_dim``).

    python benchmarks/field_defaults.py > /tmp/table.py   # then paste FIELD_DEFAULTS and CLASS_FIELDS into the module

A config.json saved by ``save_pretrained`` leaves out every field equal to its class default (``use_diff=True``), so a
fine-tune of DeepSeek-V3 may carry no ``qk_rope_head_dim``: transformers and vLLM read 64, and so must mha.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses

from transformers import CONFIG_MAPPING

from mha_cli.core.families import all_families
from mha_cli.core.families.field_defaults import CROSS_FAMILY_FIELDS, FIGURE_FIELDS


def class_defaults(model_type: str) -> dict[str, object]:
    """The declared defaults of ``model_type``'s config class (its text config's, where it has one) among
    ``FIGURE_FIELDS``, None and factories left out."""
    cls = CONFIG_MAPPING[model_type]
    text_class = getattr(cls, "sub_configs", {}).get("text_config")
    cls = text_class if isinstance(text_class, type) else cls
    if not dataclasses.is_dataclass(cls):
        return {}
    found = {}
    for field in dataclasses.fields(cls):
        if field.name in FIGURE_FIELDS and field.default is not dataclasses.MISSING and field.default is not None:
            found[field.name] = field.default
    return found


def config_class(model_type: str) -> type | None:
    """``model_type``'s config class (its text config's, where it has one), or None where it is not a dataclass."""
    cls = CONFIG_MAPPING[model_type]
    text_class = getattr(cls, "sub_configs", {}).get("text_config")
    cls = text_class if isinstance(text_class, type) else cls
    return cls if dataclasses.is_dataclass(cls) else None


def declared_fields(model_type: str) -> frozenset[str]:
    """The ``CROSS_FAMILY_FIELDS`` ``model_type``'s config class takes: its dataclass fields, the names its
    ``attribute_map`` reads as one of them (Nemotron-H's ``num_local_experts`` for ``n_routed_experts``) and the
    names its ``to_dict`` writes, which it reads back (Qwen3-MoE's ``num_local_experts``, Kimi-Linear's
    ``num_experts``)."""
    cls = config_class(model_type)
    if cls is None:
        return CROSS_FAMILY_FIELDS
    names = {field.name for field in dataclasses.fields(cls)} | set(getattr(cls, "attribute_map", {}))
    with contextlib.suppress(Exception):  # a class that needs arguments: its fields and attribute_map alone
        names |= set(cls().to_dict())
    return frozenset(names & CROSS_FAMILY_FIELDS)


def declared_table() -> dict[str, frozenset[str]]:
    """Every family model_type the installed transformers has a config class for, with its ``declared_fields``."""
    return {
        model_type: declared_fields(model_type)
        for family in all_families()
        for model_type in family.model_types
        if model_type in CONFIG_MAPPING
    }


def table() -> dict[str, dict[str, object]]:
    """Every family model_type the installed transformers has a config class for, with its ``class_defaults``."""
    rows = {}
    for family in all_families():
        for model_type in family.model_types:
            if model_type in CONFIG_MAPPING:
                found = class_defaults(model_type)
                if found:
                    rows[model_type] = dict(sorted(found.items()))
    return dict(sorted(rows.items()))


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print("FIELD_DEFAULTS: dict[str, dict[str, object]] = {")
    for model_type, defaults in table().items():
        print(f"    {model_type!r}: {defaults!r},")
    print("}")
    print("CLASS_FIELDS: dict[str, frozenset[str]] = {")
    for model_type, names in sorted(declared_table().items()):
        print(f"    {model_type!r}: frozenset({sorted(names)!r}),")
    print("}")


if __name__ == "__main__":
    main()
