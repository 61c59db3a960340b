"""The trace of a run: which rules fired, in order, with the values that made them fire."""

from mha_cli.core.record import Record
from mha_cli.core.rules.catalog import get_rule
from mha_cli.core.rules.model import Severity, Topic

Value = str | int | float | bool | None


class Finding(Record):
    """One firing of one rule."""

    id: str
    """The rule's id in the catalog (``MHA091``); ``mha skill`` prints every rule."""
    name: str
    """The rule's short name (``no-wide-mha-at-long-context``)."""
    topic: Topic
    """What the rule is about (``shape``, ``heads``, ``variant``, ``deployment``, ``refusal``, ``lint``, ...)."""
    severity: Severity
    """This firing's severity: the rule's own unless the firing was downgraded (see ``Trace.fire``)."""
    message: str
    """What the rule decided or found, with the numbers."""
    values: dict[str, Value]
    """The inputs and outputs the rule used, by name."""


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``counted(1, "warning")`` -> ``"1 warning"``; ``counted(3, "sequence")`` -> ``"3 sequences"``."""
    word = singular if n == 1 else (plural or singular + "s")
    return f"{n:,} {word}"


class Trace:
    """An ordered record of fired rules; every rule is cited by its catalog id."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def _finding(self, rule_id: str, message: str, severity: Severity | None, values: dict[str, Value]) -> Finding:
        rule = get_rule(rule_id)
        return Finding(
            id=rule.id,
            name=rule.name,
            topic=rule.topic,
            severity=severity or rule.severity,
            message=message,
            values=values,
        )

    def fire(self, rule_id: str, message: str, *, severity: Severity | None = None, **values: Value) -> Finding:
        """Record that ``rule_id`` fired; unknown ids are a programming error (KeyError).

        ``severity`` overrides the rule's own for this firing: a hard rule that is satisfied (an
        explicit request, priced and offered alternatives) fires as a warning or a note.
        """
        finding = self._finding(rule_id, message, severity, values)
        self.findings.append(finding)
        return finding

    def refire(self, rule_id: str, message: str, *, severity: Severity | None = None, **values: Value) -> Finding:
        """Replace the last firing of ``rule_id`` in place (a decision revised by a later step), else append."""
        finding = self._finding(rule_id, message, severity, values)
        for index in range(len(self.findings) - 1, -1, -1):
            if self.findings[index].id == rule_id:
                self.findings[index] = finding
                return finding
        self.findings.append(finding)
        return finding

    @property
    def ids(self) -> list[str]:
        """Ids of the fired rules, in firing order, each once."""
        return list(dict.fromkeys(f.id for f in self.findings))

    def by_severity(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]
