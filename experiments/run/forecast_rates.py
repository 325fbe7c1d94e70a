"""Measured conversation shapes for the forecast (`experiments.run.forecast`): what one candidate's model
calls looked like, read from agent traces, what a candidate of another size will cost, and how fast the
server answered.

A guided candidate (``agent.mode=guided``, `agents.llm.guided`) is a plan request, one to three fresh
requests per sample (the slice or frame of a volume or video, the mask file of a segmentation, the
annotation) and a ``data_meta`` request; none of them carries a history, so a candidate costs the plan, the
data_meta and the samples times the measured cost of one sample's steps (`guided_cost`).

A LiteLLM candidate (tools mode) is one conversation for a dataset of at most ``agent.batch_size``
samples, else a plan conversation, one per batch and a ``data_meta`` conversation (`agents.llm.phases`).
Inside a conversation the prompt grows turn by turn (the history is resent; old tool results are stubbed, so
it grows more slowly later), which is why tokens are not proportional to samples: a profile keeps each
measured conversation's per-call prompt and completion tokens, and a conversation of ``m`` samples is
predicted as ``calls per sample × m`` calls whose prompts follow the measured per-turn curve (extended past
its end by the slope of its last quarter).

Sources of profiles: a stored run's traces (``candidates/**/trace_*.jsonl``), a pilot's traces, or the prior
(``forecast_prior.json``, the offline replay on the bundled suite; ``perf/forecast_prior.py`` remakes it).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PRIOR_FILE",
    "Conversation",
    "Cost",
    "Profile",
    "Speed",
    "candidate_cost",
    "guided_cost",
    "load_prior",
    "profiles_from_folder",
    "profiles_from_json",
    "profiles_to_json",
    "speed_from_folder",
]

PRIOR_FILE = Path(__file__).with_name("forecast_prior.json")
"""The default profiles: the offline replay of the rules baseline on the bundled suite (tools mode)."""

FIXED = ("plan", "meta")
"""Conversation labels whose cost does not depend on the sample count (`agents.llm.phases`)."""


@dataclass(frozen=True)
class Conversation:
    """One measured conversation.

    Attributes:
        samples: Samples it covered (0 for the plan and the ``data_meta`` conversation).
        prompts: Prompt tokens of each call, in order.
        completions: Completion tokens of each call.
    """

    samples: int
    prompts: tuple[int, ...]
    completions: tuple[int, ...]


@dataclass(frozen=True)
class Cost:
    """Calls and tokens of some model work (a conversation, a candidate, a dataset, a job)."""

    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    conversations: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.conversations + other.conversations,
        )

    def times(self, k: float) -> Cost:
        """This cost ``k`` times over."""
        return Cost(
            self.calls * k, self.prompt_tokens * k, self.completion_tokens * k, self.conversations * k
        )

    @property
    def tokens(self) -> float:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Profile:
    """The measured conversations of one dataset for one stage (``generate`` or ``revise``).

    Attributes:
        sample: Conversations over samples (the whole dataset, a batch, one sample).
        fixed: Per label of `FIXED`, its measured conversations.
    """

    sample: list[Conversation] = field(default_factory=list)
    fixed: dict[str, list[Conversation]] = field(default_factory=dict)

    def conversation(self, samples: int) -> Cost:
        """The predicted cost of one conversation over ``samples`` samples (zero when nothing is measured)."""
        if not self.sample or samples <= 0:
            return Cost()
        per_sample, completion = self._rates
        calls = max(1, round(per_sample * samples))
        curve = self.curve
        prompt = sum(_at(curve, t) for t in range(calls))
        return Cost(calls, prompt, calls * completion, 1)

    @functools.cached_property
    def _rates(self) -> tuple[float, float]:
        """Calls per sample and completion tokens per call of the conversations over samples."""
        convs = self.sample
        per_sample = sum(len(c.prompts) for c in convs) / max(1, sum(c.samples for c in convs))
        completions = [x for c in convs for x in c.completions]
        return per_sample, sum(completions) / max(1, len(completions))

    @functools.cached_property
    def curve(self) -> list[float]:
        """Mean prompt tokens at each turn of the conversations over samples (built once, on first use: a
        profile is complete before it is asked for a prediction)."""
        return _curve(self.sample)

    def sample_step(self) -> Cost:
        """The mean cost of one sample's steps (guided mode: every conversation over samples is one sample's
        fresh requests); zero when nothing is measured."""
        samples = sum(c.samples for c in self.sample)
        if not samples:
            return Cost()
        return Cost(
            sum(len(c.prompts) for c in self.sample) / samples,
            sum(sum(c.prompts) for c in self.sample) / samples,
            sum(sum(c.completions) for c in self.sample) / samples,
            1,
        )

    def fixed_cost(self, label: str) -> Cost | None:
        """The mean cost of the ``plan`` or ``meta`` conversation, or None when none was measured."""
        convs = self.fixed.get(label) or []
        if not convs:
            return None
        n = len(convs)
        return Cost(
            sum(len(c.prompts) for c in convs) / n,
            sum(sum(c.prompts) for c in convs) / n,
            sum(sum(c.completions) for c in convs) / n,
            1,
        )


def _curve(convs: Sequence[Conversation]) -> list[float]:
    """Mean prompt tokens at each turn, over the conversations that reached it."""
    length = max(len(c.prompts) for c in convs)
    out = []
    for t in range(length):
        values = [c.prompts[t] for c in convs if len(c.prompts) > t]
        out.append(sum(values) / len(values))
    return out


def _at(curve: Sequence[float], t: int) -> float:
    """The curve at turn ``t``; past its end, its last value plus the slope of its last quarter."""
    if t < len(curve):
        return curve[t]
    window = max(1, len(curve) // 4)
    last = len(curve) - 1
    slope = (curve[last] - curve[max(0, last - window)]) / window if last > 0 else 0.0
    return curve[last] + max(0.0, slope) * (t - last)


def candidate_cost(
    samples: int,
    batch_size: int,
    own: Profile,
    fallback: Sequence[Profile],
    *,
    revise: bool = False,
) -> Cost:
    """The predicted cost of one candidate (or one revision) of a dataset in the tools mode.

    Args:
        samples: The dataset's samples.
        batch_size: ``agent.batch_size``.
        own: The profile used for the conversations over samples.
        fallback: Profiles asked, in order, for a ``plan``/``meta`` conversation ``own`` did not measure.
        revise: A revision: no plan conversation (it reuses the candidate's).

    Returns:
        Calls, tokens and conversations.
    """
    if samples <= batch_size:
        return own.conversation(samples)
    sizes = [batch_size] * (samples // batch_size) + ([samples % batch_size] if samples % batch_size else [])
    total = Cost()
    for size in sizes:
        total = total + own.conversation(size)
    for label in FIXED[1:] if revise else FIXED:
        fixed = next((c for p in (own, *fallback) if (c := p.fixed_cost(label)) is not None), None)
        total = total + (fixed or Cost())
    return total


GUIDED_MOST_STEPS = 3
"""The most requests the guided mode makes for one sample: the slice (or frame), the mask file, the annotation
(`agents.llm.guided`), retries aside."""


def guided_cost(
    samples: int,
    own: Profile,
    fallback: Sequence[Profile],
    *,
    revise: bool = False,
    most: bool = False,
    plans: int = 1,
) -> Cost:
    """The predicted cost of one guided candidate (or one revision) of a dataset.

    Args:
        samples: The dataset's samples.
        own: The profile whose sample steps are used.
        fallback: Profiles asked, in order, for a ``plan``/``meta`` cost ``own`` did not measure.
        revise: A revision: no plan request (the candidate's plan is reused), one request per sample.
        most: The high bound: every sample takes `GUIDED_MOST_STEPS` requests (a model that plans a volume
            or a segmentation where the measured one did not), each as large as the measured ones.
        plans: Plans sampled per candidate (``agent.plans``, ``strategy=plans``): each is one plan request,
            and more than one adds the request that asks a plan the data contradicts again (counted always:
            the forecast errs high, as it comes before paying).

    Returns:
        Calls, tokens and steps (as conversations).
    """
    step = own.sample_step()
    if most and step.calls and step.calls < GUIDED_MOST_STEPS:
        step = step.times(GUIDED_MOST_STEPS / step.calls)
    total = step.times(samples)
    for label in FIXED[1:] if revise else FIXED:
        fixed = next((c for p in (own, *fallback) if (c := p.fixed_cost(label)) is not None), None)
        asked = plans + 1 if plans > 1 else 1
        total = total + (fixed or Cost()).times(asked if label == "plan" else 1)
    return total


@dataclass(frozen=True)
class Speed:
    """How fast a server answered: seconds per prompt token and per completion token, fitted on the measured
    calls' latencies (``latency = prompt × s_prompt + completion × s_completion``, least squares, both >= 0).

    Attributes:
        prompt_s: Seconds per prompt token (0: too fast to measure).
        completion_s: Seconds per completion token.
        calls: The calls it was measured on.
    """

    prompt_s: float
    completion_s: float
    calls: int

    def seconds(self, cost: Cost) -> float:
        """The server time of ``cost``'s calls, one after another."""
        return cost.prompt_tokens * self.prompt_s + cost.completion_tokens * self.completion_s

    def rates(self) -> tuple[float | None, float | None]:
        """(prompt tokens/s, completion tokens/s); None where the fit found no cost."""
        return (
            1 / self.prompt_s if self.prompt_s > 0 else None,
            1 / self.completion_s if self.completion_s > 0 else None,
        )


def fit_speed(calls: Sequence[tuple[int, int, float]]) -> Speed | None:
    """The `Speed` of ``(prompt tokens, completion tokens, seconds)`` calls; None without a timed call."""
    calls = [c for c in calls if c[2] > 0 and (c[0] or c[1])]
    if not calls:
        return None
    pp = sum(p * p for p, _, _ in calls)
    cc = sum(c * c for _, c, _ in calls)
    pc = sum(p * c for p, c, _ in calls)
    pt = sum(p * t for p, _, t in calls)
    ct = sum(c * t for _, c, t in calls)
    det = pp * cc - pc * pc
    a = (pt * cc - ct * pc) / det if det > 0 else -1.0
    b = (ct * pp - pt * pc) / det if det > 0 else -1.0
    # A negative share means one kind of token explains the time alone: fit that one (non-negative least
    # squares in two unknowns).
    if a < 0 or b < 0:
        a_only = pt / pp if pp else 0.0
        b_only = ct / cc if cc else 0.0
        err_a = sum((t - a_only * p) ** 2 for p, _, t in calls)
        err_b = sum((t - b_only * c) ** 2 for _, c, t in calls)
        a, b = (a_only, 0.0) if err_a <= err_b else (0.0, b_only)
    return Speed(max(0.0, a), max(0.0, b), len(calls))


def speed_from_folder(folder: Path) -> Speed | None:
    """The server's speed measured on the calls of a run (or pilot) folder's traces (cache hits left out).

    A call's latency also holds the time it waited for the server's slot (a one-slot local server given a
    candidate's samples at once queues them), so each call is timed by its service: its latency less its
    ``slot_wait_s``; in a trace without it, its latency or, when less, the time since its candidate's
    previous answer.

    Args:
        folder: A folder holding agent traces (``trace_*.jsonl``), any depth.

    Returns:
        The speed, or None when no call was timed.
    """
    calls: list[tuple[int, int, float]] = []
    for path in sorted(folder.rglob("trace_*.jsonl")):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        previous: float | None = None
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") != "model_call" or event.get("cached"):
                continue
            latency, done = float(event.get("latency_s") or 0.0), float(event.get("t") or 0.0)
            if "slot_wait_s" in event:
                service = max(0.0, latency - float(event.get("slot_wait_s") or 0.0))
            elif previous is not None and done > previous:
                service = min(latency, done - previous)
            else:
                service = latency
            previous = done
            calls.append(
                (int(event.get("prompt_tokens") or 0), int(event.get("completion_tokens") or 0), service)
            )
    return fit_speed(calls)


# -- reading traces -----------------------------------------------------------------------------


def _samples_of(label: str, samples: int, batch_size: int) -> int:
    """Samples a conversation covered, from its label (``batch k/n``, ``sample i``, ``dataset``)."""
    if label.startswith("batch ") and "/" in label:
        k = int(label.split()[1].split("/")[0])
        return max(0, min(batch_size, samples - (k - 1) * batch_size))
    if label.startswith(("sample ", "revise ")):  # a guided step of one sample (generate or revise)
        return 1
    return samples


def _trace_conversations(path: Path) -> tuple[str, str, list[tuple[str, Conversation]]] | None:
    """(dataset, stage, (label, conversation) pairs) of one ``trace_*.jsonl``; None without a start event."""
    start: dict[str, Any] | None = None
    calls: dict[str, list[tuple[int, int]]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut by a crash: the rest still counts
        if event.get("event") == "start" and start is None:
            start = event
        elif event.get("event") == "model_call":
            label = str(event.get("conversation") or "dataset")
            usage = (int(event.get("prompt_tokens") or 0), int(event.get("completion_tokens") or 0))
            calls.setdefault(label, []).append(usage)
    if start is None:
        return None
    samples, batch = int(start.get("samples") or 0), int(start.get("batch_size") or 1)
    convs = [
        (
            label,
            Conversation(
                0 if label in FIXED else _samples_of(label, samples, batch),
                tuple(p for p, _ in made),
                tuple(c for _, c in made),
            ),
        )
        for label, made in calls.items()
    ]
    stage = "revise" if start.get("mode") == "revise" else "generate"
    return str(start.get("dataset") or path.parent.parent.name), stage, convs


def profiles_from_folder(folder: Path) -> dict[str, dict[str, Profile]]:
    """Every profile measured in a run (or pilot) folder: dataset -> stage -> profile.

    Args:
        folder: A folder holding agent traces (``trace_generate.jsonl``, ``trace_revise.jsonl``), any depth.

    Returns:
        The profiles; empty when no trace has a model call (a ``rules`` run).
    """
    out: dict[str, dict[str, Profile]] = {}
    for path in sorted(folder.rglob("trace_*.jsonl")):
        found = _trace_conversations(path)
        if found is None:
            continue
        dataset, stage, convs = found
        profile = out.setdefault(dataset, {}).setdefault(stage, Profile())
        for label, conv in convs:
            if label in FIXED:
                profile.fixed.setdefault(label, []).append(conv)
            elif conv.prompts and conv.samples > 0:
                profile.sample.append(conv)
    return {d: s for d, s in out.items() if any(p.sample for p in s.values())}


def profiles_to_json(profiles: Mapping[str, Mapping[str, Profile]]) -> dict[str, Any]:
    """Profiles as plain JSON (the prior file, ``forecast.json``'s record of what was measured)."""

    def conv(c: Conversation) -> dict[str, Any]:
        return {"samples": c.samples, "prompts": list(c.prompts), "completions": list(c.completions)}

    return {
        d: {
            stage: {
                "sample": [conv(c) for c in p.sample],
                **{k: [conv(c) for c in v] for k, v in p.fixed.items()},
            }
            for stage, p in stages.items()
        }
        for d, stages in profiles.items()
    }


def profiles_from_json(data: Mapping[str, Any]) -> dict[str, dict[str, Profile]]:
    """The inverse of `profiles_to_json`."""

    def conv(c: Mapping[str, Any]) -> Conversation:
        return Conversation(int(c["samples"]), tuple(c["prompts"]), tuple(c["completions"]))

    out: dict[str, dict[str, Profile]] = {}
    for d, stages in data.items():
        for stage, p in stages.items():
            fixed = {k: [conv(c) for c in v] for k, v in p.items() if k in FIXED}
            out.setdefault(d, {})[stage] = Profile([conv(c) for c in p.get("sample", [])], fixed)
    return out


def load_prior(
    path: Path = PRIOR_FILE, mode: str = "tools"
) -> tuple[dict[str, dict[str, Profile]], dict[str, Any]]:
    """The prior profiles of an agent mode and their provenance (how and when they were measured).

    Args:
        path: The prior file.
        mode: ``tools`` (also the script mode's stand-in) or ``guided`` (its own key of the file).

    Raises:
        ValueError: The file is missing or unreadable (a broken install).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"the forecast's prior {path} cannot be read ({exc})") from exc
    used = "guided" if mode == "guided" and isinstance(data.get("guided"), dict) else "tools"
    data = data["guided"] if used == "guided" else data
    return profiles_from_json(data["profiles"]), {"mode": used, **dict(data.get("provenance") or {})}
