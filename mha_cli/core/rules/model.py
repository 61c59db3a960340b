"""What a rule is: an id, a symbolic name, a condition, an action, a rationale and a reference.

After pylint's checkers: the id (``MHA001``) never changes once published, so scripts and CI
logs can rely on it; the name is for people. Rules are plain data; the code that evaluates them
(``recommend.py``, ``check.py``) cites them by id and the engine records each firing.
"""

from typing import Literal, NamedTuple

Topic = Literal["shape", "heads", "variant", "deployment", "mla", "init", "bias", "testability", "refusal", "lint"]
Severity = Literal["hard", "warning", "info"]
"""hard: a refusal, ``mha check`` exits 1 when it fires; warning: a risk to read; info: a design decision."""
Scope = Literal["recommend", "check", "both"]

TOPIC_TITLES: dict[Topic, str] = {
    "shape": "Shape from the budget",
    "heads": "Head geometry",
    "variant": "Projection variant",
    "deployment": "Deployment fit",
    "mla": "MLA latent rank",
    "init": "Initialisation",
    "bias": "Biases",
    "testability": "Testability hook",
    "refusal": "Hard rules (refusals)",
    "lint": "Lint-only checks",
}


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class Rule(NamedTuple):
    """One rule of the configurator skill."""

    id: str
    """Stable id, ``MHA`` + three digits."""
    name: str
    """Symbolic name, kebab-case."""
    topic: Topic
    severity: Severity
    scope: Scope
    condition: str
    """When the rule applies, in words a person can check."""
    action: str
    """What the configurator does (recommend) or reports (check) when it applies."""
    rationale: str
    reference: str
    """A paper or public model that backs the rule."""
