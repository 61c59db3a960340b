"""Build a ``DeploymentSpec`` from a config file's values overridden by command-line options."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.validation import describe_validation_error

_OPTION_NAMES = {
    "seq_len": "--seq",
    "batch": "--batch",
    "kv_dtype": "--kv-dtype",
    "weight_dtype": "--weight-dtype",
    "tp": "--tp",
    "block_size": "--block-size",
    "target": "--target",
    "mla_cache": "--mla-cache",
}


def merge_deployment(base: DeploymentSpec | None, **overrides: Any) -> DeploymentSpec:
    """``base`` (or the defaults) with every override that is not ``None`` applied and validated."""
    fields = base.model_dump(exclude_unset=True) if base is not None else {}
    fields.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return DeploymentSpec.model_validate(fields)
    except ValidationError as exc:
        message = describe_validation_error(exc)
        for field, option in _OPTION_NAMES.items():
            message = message.replace(f"{field}:", f"{option}:")
        raise BadInputError(message) from exc
