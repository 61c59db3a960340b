"""The result of the testability hook: one pydantic object, a ``hook`` block in ``mha verify --json``.

Scripts rely on ``accuracy``, ``threshold``, ``passed``, ``layers``, ``control_accuracy``, ``steps``,
``seconds`` and ``scaled``.
"""

from __future__ import annotations

from mha_cli.core.record import Record


class HookResult(Record):
    """An N-layer scaled copy of the design trained on induction, and its 1-layer control."""

    accuracy: float
    """Fraction of held-out induction targets (test set) the N-layer copy predicts (argmax)."""
    threshold: float
    """Accuracy the copy must reach (rule MHA050)."""
    passed: bool
    """accuracy >= threshold and the control below it (``hook_passed``): a control at the threshold means the task
    leaks a shortcut a single layer can use, so the copy's score proves nothing about induction."""
    layers: int
    """Depth of the copy (2 unless --hook-layers)."""
    control_accuracy: float
    """The same measurement for the 1-layer control, trained on the same batches for as many steps."""
    control_layers: int = 1
    control_below_threshold: bool
    """The control stayed below the threshold, as a 1-layer model must (induction composes two layers)."""
    steps: int
    """Training steps of the copy (it stops once the validation accuracy reaches ``stop_accuracy``)."""
    max_steps: int
    control_steps: int
    stop_accuracy: float
    """Validation accuracy that ends training early: halfway between the threshold and 1."""
    validation_accuracy: float
    """The copy's accuracy on the validation set when training ended."""
    seconds: float
    """Wall-clock seconds of both trainings and their measurements."""
    scaled: list[str]
    """What the copy changed from the design, and why (one sentence each)."""
    size: str
    """The hook's size preset (default; quick is for tests)."""
    task: str
    """The induction task in words: vocabulary, sequence length, segment lengths, scored positions."""
    scored_targets: int
    """Induction targets in the test set."""
    seed: int
    device: str
    device_name: str

    @property
    def check_detail(self) -> str:
        """The hook's figure against its limit, for ``mha verify``'s check details."""
        relation = ">=" if self.accuracy >= self.threshold else "<"
        control = "<" if self.control_below_threshold else ">= (must stay below: FAIL)"
        return (
            f"{self.layers}-layer copy {self.accuracy:.1%} {relation} {self.threshold:.0%} after {self.steps} steps;"
            f" 1-layer control {self.control_accuracy:.1%} {control} {self.threshold:.0%}"
        )


def hook_passed(accuracy: float, control_accuracy: float, threshold: float) -> bool:
    """The hook's verdict: the copy reaches the threshold and the 1-layer control, the floor that must lose, does not."""
    return accuracy >= threshold > control_accuracy
