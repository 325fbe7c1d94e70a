"""Validation results: one check's verdict, one sample's scores, and a candidate's whole report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOT_APPLICABLE = "not_applicable"
"""The ``details`` key of a result whose check does not apply to the sample (it carries no weight)."""


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check on one sample (or on the candidate's ``data_meta.json``).

    Attributes:
        score: In [0, 1]; 1.0 means the check is fully satisfied.
        message: What is wrong and how to fix it (empty when the check passes); S2 shows it to the agent.
        fields: The JSON field paths the check covers (``tasks.segmentation``,
        ``data_meta.data_volume.total``).
        details: Free JSON-able sub-results (parts, matched field, measured values) for reports and S4.
    """

    score: float
    message: str = ""
    fields: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Clamp rather than raise: a user check returning 1.0000001 must not break a run.
        score = self.score
        if score.__class__ is not float or not 0.0 <= score <= 1.0:
            object.__setattr__(self, "score", min(1.0, max(0.0, float(score))))

    @property
    def passed(self) -> bool:
        """Whether the check is fully satisfied."""
        return self.score >= 1.0 - 1e-9

    @classmethod
    def ok(cls, fields: tuple[str, ...] = (), **details: Any) -> CheckResult:
        """A passing result."""
        return cls(1.0, "", fields, dict(details))

    @classmethod
    def not_applicable(cls, reason: str, fields: tuple[str, ...] = ()) -> CheckResult:
        """A check that has nothing to judge on this sample: it passes and carries no weight in the total.

        Unlike a passing result (which counts 1.0 at the check's weight), this leaves the sample's total as if
        the profile did not list the check, so adding such a check changes no total where it does not apply.
        """
        return cls(1.0, "", fields, {NOT_APPLICABLE: reason})

    @property
    def applies(self) -> bool:
        """False for a `not_applicable` result."""
        return NOT_APPLICABLE not in self.details

    @classmethod
    def fail(
        cls, message: str, fields: tuple[str, ...] = (), score: float = 0.0, **details: Any
    ) -> CheckResult:
        """A failing (or partly failing) result with the message the agent will read."""
        return cls(score, message, fields, dict(details))


@dataclass(frozen=True)
class CheckOutcome:
    """A check's result together with its registration data (weight, risk class)."""

    name: str
    weight: float
    high_risk: bool
    result: CheckResult

    @property
    def score(self) -> float:
        """Shortcut for ``result.score``."""
        return self.result.score


def weighted_total(outcomes: dict[str, CheckOutcome]) -> float:
    """Weighted mean of the scores of the checks that apply (0.0 when none carries weight; 1.0 when none
    applies)."""
    applying = [o for o in outcomes.values() if o.result.applies]
    weight = sum(o.weight for o in applying)
    if weight <= 0:
        return 1.0 if outcomes and not applying else 0.0
    return sum(o.weight * o.score for o in applying) / weight


@dataclass(frozen=True)
class SampleReport:
    """All check outcomes of one candidate on one manifest index.

    Attributes:
        index: The manifest index.
        total: The weighted mean of the check scores, in [0, 1].
        checks: Outcomes by check name, in profile order.
    """

    index: int
    total: float
    checks: dict[str, CheckOutcome]

    def scores(self) -> dict[str, float]:
        """Check name → score."""
        return {name: o.score for name, o in self.checks.items()}

    def failed(self, *, high_risk_only: bool = False) -> list[CheckOutcome]:
        """The outcomes that are not fully satisfied, in profile order."""
        return [
            o for o in self.checks.values() if not o.result.passed and (o.high_risk or not high_risk_only)
        ]

    def field_verdicts(self) -> dict[str, float]:
        """Per JSON field path, the lowest score of the checks that cover it (1.0 = no check objects)."""
        verdicts: dict[str, float] = {}
        for outcome in self.checks.values():
            for path in outcome.result.fields:
                verdicts[path] = min(verdicts.get(path, 1.0), outcome.score)
        return verdicts


@dataclass(frozen=True)
class Report:
    """A candidate folder validated under one profile.

    Attributes:
        profile: The profile name.
        candidate_dir: The ``agent1_data_organization`` folder that was validated.
        samples: Per manifest index, the sample report.
        data_meta: The dataset-level checks on ``data_meta.json`` (a SampleReport with index -1).
    """

    profile: str
    candidate_dir: Path
    samples: dict[int, SampleReport]
    data_meta: SampleReport

    def sample_total(self, index: int) -> float:
        """The total of sample ``index`` (0.0 when the report lacks it)."""
        sample = self.samples.get(index)
        return sample.total if sample is not None else 0.0

    def check_score(self, index: int, name: str) -> float:
        """The score of check ``name`` on sample ``index`` (0.0 when the report lacks either)."""
        sample = self.samples.get(index)
        outcome = sample.checks.get(name) if sample is not None else None
        return outcome.score if outcome is not None else 0.0

    @property
    def mean_total(self) -> float:
        """Mean of the per-sample totals (0.0 for an empty manifest)."""
        if not self.samples:
            return 0.0
        return sum(s.total for s in self.samples.values()) / len(self.samples)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` object: ``{"profile", "samples": {"<i>": {"total",
        "checks"}}, "data_meta"}``."""
        return {
            "profile": self.profile,
            "candidate_dir": str(self.candidate_dir),
            "samples": {
                str(i): {
                    "total": round(s.total, 6),
                    "checks": {k: round(v, 6) for k, v in s.scores().items()},
                }
                for i, s in sorted(self.samples.items())
            },
            "data_meta": {
                "total": round(self.data_meta.total, 6),
                "checks": {k: round(v, 6) for k, v in self.data_meta.scores().items()},
            },
        }
