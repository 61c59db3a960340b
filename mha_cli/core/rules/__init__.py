"""The configurator's rules: data (``catalog``), their shape (``model``) and the trace (``engine``)."""

from mha_cli.core.rules.catalog import RULES, get_rule
from mha_cli.core.rules.engine import Finding, Trace
from mha_cli.core.rules.model import Rule

__all__ = ["RULES", "Finding", "Rule", "Trace", "get_rule"]
