"""The trace of a run: which rules fired, in order, with the values that made them fire."""

from __future__ import annotations

from pydantic import BaseModel

from mha_cli.core.rules.catalog import get_rule
from mha_cli.core.rules.model import Severity, Topic

Value = str | int | float | bool | None


class Finding(BaseModel):
    """One firing of one rule."""

    id: str
    name: str
    topic: Topic
    severity: Severity
    """This firing's severity: the rule's own unless the firing was downgraded (see ``Trace.fire``)."""
    message: str
    """What the rule decided or found, with the numbers."""
    values: dict[str, Value]
    """The inputs and outputs the rule used, by name."""


class Trace:
    """An ordered record of fired rules; every rule is cited by its catalog id."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def fire(self, rule_id: str, message: str, *, severity: Severity | None = None, **values: Value) -> Finding:
        """Record that ``rule_id`` fired; unknown ids are a programming error (KeyError).

        ``severity`` overrides the rule's own for this firing: a hard rule that is satisfied (an
        explicit request, priced and offered alternatives) fires as a warning or a note.
        """
        rule = get_rule(rule_id)
        finding = Finding(
            id=rule.id,
            name=rule.name,
            topic=rule.topic,
            severity=severity or rule.severity,
            message=message,
            values=values,
        )
        self.findings.append(finding)
        return finding

    @property
    def ids(self) -> list[str]:
        """Ids of the fired rules, in firing order, each once."""
        return list(dict.fromkeys(f.id for f in self.findings))

    def by_severity(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]
