"""Scoring profiles: ``official`` (the reference scorer, quirks included) and ``strict`` (documented
corrections).

Each correction is one boolean flag, so any single difference from ``official`` can be switched on or off
(``Profile.named("strict").replace(geometry=False)``). docs/scoring.md gives the reason for every flag.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

RulesName = Literal["official", "strict"]
"""The built-in scoring rules: the closed set a config (``scorer.profile``) or ``--profile`` may name."""


@dataclass(frozen=True)
class ScoringRules:
    """The scoring rules: a set of corrections applied on top of the reference scorer's behaviour.

    Not the validator's check profile (`validator.registry.Profile`) nor a strategy: the word "profile" in
    ``scorer.profile`` / ``--profile`` names one of these (`RulesName`).

    Attributes:
        name: Label written into results.
        missing_samples_zero: Source-gated means (SC, IC, IV, INR, CF) count samples with no valid annotation
            as 0 instead of leaving them out.
        image_path_not_evidence: ``record.image_path`` is neither a scanned source value nor trace evidence.
        labels_not_evidence: ``label_text`` / ``class_name`` / ``label_name`` are neither scanned source
            values nor trace evidence.
        non_object_json_invalid: An annotation whose top level is not a JSON object is an invalid sample; the
            reference scorer aborts the whole model instead.
        geometry: When the GT sample carries ``geometry``, mask Dice, box F1 and slice/frame correctness
            become extra content-fidelity blocks and are reported as separate columns.
        image_size_cap: An image whose header claims more pixels than Pillow's decompression-bomb limit is
            invalid; the reference only walks the chunks, so a 64-byte PNG claiming 100000x100000 passes.
        metrics: Registered metrics computed after the eleven (`benchmark.score.metrics`); not a correction.
    """

    name: str = "official"
    missing_samples_zero: bool = False
    image_path_not_evidence: bool = False
    labels_not_evidence: bool = False
    non_object_json_invalid: bool = False
    geometry: bool = False
    image_size_cap: bool = False
    metrics: tuple[str, ...] = ()

    @staticmethod
    def named(name: str) -> ScoringRules:
        """Return a built-in profile by name.

        Args:
            name: ``official`` or ``strict``.

        Returns:
            The profile.

        Raises:
            ValueError: For an unknown name (the message lists the valid ones).
        """
        try:
            return PROFILES[name]
        except KeyError:
            raise ValueError(
                f"unknown scoring profile {name!r}; valid: {', '.join(sorted(PROFILES))}"
            ) from None

    def with_metrics(self, names: tuple[str, ...]) -> ScoringRules:
        """The same rules (and name), computing these extra metrics too."""
        return dataclasses.replace(self, metrics=tuple(names))

    def replace(self, **flags: bool) -> ScoringRules:
        """Return a copy with some flags changed (the name gets a ``+custom`` suffix)."""
        changes: dict[str, object] = dict(flags)
        return dataclasses.replace(self, name=f"{self.name}+custom", **changes)  # type: ignore[arg-type]

    @property
    def corrections(self) -> tuple[str, ...]:
        """Names of the flags that are on."""
        return tuple(
            f.name
            for f in dataclasses.fields(self)
            if f.name not in ("name", "metrics") and getattr(self, f.name)
        )


Profile = ScoringRules
"""The former name of `ScoringRules`, kept for the modules of the scorer that still spell it."""

OFFICIAL = ScoringRules()
STRICT = ScoringRules(
    name="strict",
    missing_samples_zero=True,
    image_path_not_evidence=True,
    labels_not_evidence=True,
    non_object_json_invalid=True,
    geometry=True,
    image_size_cap=True,
)
PROFILES: dict[str, ScoringRules] = {"official": OFFICIAL, "strict": STRICT}
assert set(PROFILES) == set(get_args(RulesName))  # the closed type and the table name the same rules


def resolve(profile: str | ScoringRules) -> ScoringRules:
    """Accept scoring rules or their name."""
    return profile if isinstance(profile, ScoringRules) else ScoringRules.named(profile)
