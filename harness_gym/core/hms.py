"""The Harness Maturity Score: seven process events detected on a finished trajectory.

HMS is a diagnostic of *how* the harness worked, reported beside the task quality G and never used
as a training reward. Each event is ``{fired, applicable}``; an event that does not apply to a domain
(TestBeforeSubmit outside coding) or to an episode (RevisionAfterFailure without any failure) is left
out of the normalisation::

    HMS_norm = sum(w_e * fired_e) / sum(|w_e|)   over applicable events e

Default weights are +1 for every event and -1 for the EarlySubmit penalty. Every threshold is a field
of ``HMSParams`` so sensitivity sweeps (the paper's EarlySubmit threshold 0.25/0.30/0.35) are one
argument away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

EVENTS: tuple[str, ...] = (
    "CheckBeforeSubmit",
    "EvidenceBeforeClaim",
    "TestBeforeSubmit",
    "RevisionAfterFailure",
    "ValidToolUse",
    "StopWhenSufficient",
    "EarlySubmit",
)


def _default_weights() -> dict[str, float]:
    return {event: (-1.0 if event == "EarlySubmit" else 1.0) for event in EVENTS}


@dataclass(frozen=True)
class HMSParams:
    """Detector thresholds and weights (defaults follow the paper's calibrated detector)."""

    early_submit_threshold: float = 0.25
    """EarlySubmit: a low-quality submit at step <= threshold * max_steps is early."""
    early_submit_quality: float = 0.5
    """EarlySubmit: G below this counts as low quality; also the coding pass-rate floor."""
    sufficient_coverage: float = 0.85
    """StopWhenSufficient: the CHECK before the submit must report at least this coverage."""
    claim_support: float = 0.70
    """EvidenceBeforeClaim: fraction of the final draft's claims that evidence must support."""
    valid_tool_rate: float = 0.90
    """ValidToolUse: fraction of tool calls that must be valid."""
    revision_window: int = 3
    """RevisionAfterFailure: a REVISE must follow each failure signal within this many steps."""
    check_window: int = 3
    """StopWhenSufficient: the sufficient CHECK must lie within this many steps before SUBMIT."""
    weights: Mapping[str, float] = field(default_factory=_default_weights)

    def __post_init__(self) -> None:
        for name, kind in (("revision_window", int), ("check_window", int)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, kind) or value < 0:
                raise ValueError(f"hms_params {name} must be a non-negative int, got {value!r}")
        for name in (
            "early_submit_threshold",
            "early_submit_quality",
            "sufficient_coverage",
            "claim_support",
            "valid_tool_rate",
        ):
            _check_number(name, getattr(self, name))
        if not isinstance(self.weights, Mapping):
            raise ValueError(f"hms_params weights must be a mapping event -> weight, got {self.weights!r}")
        for event, weight in self.weights.items():
            _check_number(f"weights[{event!r}]", weight, low=None)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> HMSParams:
        """Parameters from a mapping of field names; an unknown key is refused (one line)."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(str(key) for key in data if key not in known)
        if unknown:
            raise ValueError(f"unknown hms_params key(s) {unknown}; known: {', '.join(known)}")
        return cls(**data)


def _check_number(name: str, value: Any, low: float | None = 0.0) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or (low is not None and value < low):
        bound = "a non-negative number" if low is not None else "a number"
        raise ValueError(f"hms_params {name} must be {bound}, got {value!r}")


@dataclass(frozen=True)
class EpisodeOutcome:
    """What the detectors read: the step records plus the terminal verdict."""

    steps: Sequence[Mapping[str, Any]]
    submitted: bool
    max_steps: int
    G: float
    rubric: Mapping[str, tuple[float, float]]
    signals: Mapping[str, float]
    """Verifier measurements of the final artifact, e.g. ``claim_support`` or ``pass_rate``."""
    events: frozenset[str]
    """The events that apply to this domain."""
    evidence_required: bool = False


Event = dict[str, bool]


def _event(fired: bool, applicable: bool) -> Event:
    return {"fired": bool(fired and applicable), "applicable": bool(applicable)}


def _valid(steps: Sequence[Mapping[str, Any]], action: str) -> list[int]:
    return [i for i, s in enumerate(steps) if s["action"] == action and s["valid"]]


def _submit_index(ep: EpisodeOutcome) -> int | None:
    return len(ep.steps) - 1 if ep.submitted else None


def event_check_before_submit(ep: EpisodeOutcome, p: HMSParams) -> Event:
    """A CHECK precedes SUBMIT; when that CHECK found missing items, something happened in between."""
    applicable = "CheckBeforeSubmit" in ep.events
    submit = _submit_index(ep)
    if submit is None:
        return _event(False, applicable)
    checks = [i for i in _valid(ep.steps, "CHECK") if i < submit]
    if not checks:
        return _event(False, applicable)
    last = checks[-1]
    found_missing = ep.steps[last]["check"]["missing"] > 0
    return _event(not found_missing or submit - last >= 2, applicable)


def event_evidence_before_claim(ep: EpisodeOutcome, p: HMSParams) -> Event:
    """Evidence was gathered before the first draft, and the final claims are mostly supported."""
    applicable = "EvidenceBeforeClaim" in ep.events
    drafts = _valid(ep.steps, "DRAFT")
    if not drafts or not ep.submitted:
        return _event(False, applicable)
    gathered_first = any(s.get("evidence") for s in ep.steps[: drafts[0]])
    supported = ep.signals.get("claim_support", 0.0) >= p.claim_support
    return _event(gathered_first and supported, applicable)


def event_test_before_submit(ep: EpisodeOutcome, p: HMSParams) -> Event:
    """A fully passing test run on the submitted draft, and the submit does not follow a failing run."""
    applicable = "TestBeforeSubmit" in ep.events
    submit = _submit_index(ep)
    if submit is None or submit == 0:
        return _event(False, applicable)
    final_hash = ep.steps[submit]["draft_hash"]
    runs = [i for i, s in enumerate(ep.steps[:submit]) if s["valid"] and "tests" in s]

    def passing(i: int) -> bool:
        tests = ep.steps[i]["tests"]
        return tests["total"] > 0 and tests["passed"] == tests["total"]

    passed_on_final = any(passing(i) and ep.steps[i]["draft_hash"] == final_hash for i in runs)
    prev = ep.steps[submit - 1]
    after_failing = "tests" in prev and prev["valid"] and not passing(submit - 1)
    return _event(passed_on_final and not after_failing, applicable)


def event_revision_after_failure(ep: EpisodeOutcome, p: HMSParams) -> Event:
    """Every failure signal is followed by a REVISE within ``revision_window`` steps."""
    failures = [i for i, s in enumerate(ep.steps) if s["failure"]]
    applicable = "RevisionAfterFailure" in ep.events and bool(failures)
    revises = set(_valid(ep.steps, "REVISE"))
    fired = all(any(j in revises for j in range(i + 1, i + 1 + p.revision_window)) for i in failures)
    return _event(fired, applicable)


def event_valid_tool_use(ep: EpisodeOutcome, p: HMSParams) -> Event:
    """At least ``valid_tool_rate`` of the tool calls were valid."""
    calls = [s["tool"]["valid"] for s in ep.steps if "tool" in s]
    applicable = "ValidToolUse" in ep.events and bool(calls)
    fired = bool(calls) and sum(calls) / len(calls) >= p.valid_tool_rate
    return _event(fired, applicable)


def event_stop_when_sufficient(ep: EpisodeOutcome, p: HMSParams) -> Event:
    """An active SUBMIT with budget left, shortly after a CHECK that found the work sufficient."""
    applicable = "StopWhenSufficient" in ep.events
    submit = _submit_index(ep)
    if submit is None or ep.steps[submit]["t"] >= ep.max_steps:
        return _event(False, applicable)
    window = range(max(0, submit - p.check_window), submit)
    fired = any(
        ep.steps[i]["action"] == "CHECK"
        and ep.steps[i]["valid"]
        and ep.steps[i]["check"]["coverage"] >= p.sufficient_coverage
        for i in window
    )
    return _event(fired, applicable)


def event_early_submit(ep: EpisodeOutcome, p: HMSParams) -> Event:
    """Penalty: a poor submit made very early, or a submit despite what the harness itself saw.

    Fires when the submitted draft is poor (G below ``early_submit_quality``) and was submitted within
    ``early_submit_threshold * max_steps`` steps; or when the harness submitted a draft whose last CHECK
    reported at least half of its items missing, or whose last test run passed under
    ``early_submit_quality`` of the tests; or when evidence is required and none was gathered. The last
    three are read from the trajectory, so they judge the process, not the hidden outcome.
    """
    applicable = "EarlySubmit" in ep.events
    submit = _submit_index(ep)
    if submit is None:
        return _event(False, applicable)
    quality, step = ep.G, ep.steps[submit]["t"]
    quick_and_poor = quality < p.early_submit_quality and step <= p.early_submit_threshold * ep.max_steps
    final_hash = ep.steps[submit]["draft_hash"]
    on_final = [s for s in ep.steps[:submit] if s["valid"] and s["draft_hash"] == final_hash]
    checks = [s["check"] for s in on_final if "check" in s]
    half_missing = bool(checks) and checks[-1]["missing"] >= 0.5
    runs = [s["tests"] for s in on_final if "tests" in s and s["tests"]["total"] > 0]
    failing_tests = bool(runs) and runs[-1]["passed"] / runs[-1]["total"] < p.early_submit_quality
    no_evidence = ep.evidence_required and not any(s.get("evidence") for s in ep.steps)
    return _event(quick_and_poor or half_missing or failing_tests or no_evidence, applicable)


DETECTORS: dict[str, Callable[[EpisodeOutcome, HMSParams], Event]] = {
    "CheckBeforeSubmit": event_check_before_submit,
    "EvidenceBeforeClaim": event_evidence_before_claim,
    "TestBeforeSubmit": event_test_before_submit,
    "RevisionAfterFailure": event_revision_after_failure,
    "ValidToolUse": event_valid_tool_use,
    "StopWhenSufficient": event_stop_when_sufficient,
    "EarlySubmit": event_early_submit,
}


DEFAULT_PARAMS = HMSParams()


def detect(ep: EpisodeOutcome, params: HMSParams | None = None) -> dict[str, Event]:
    """All seven events of one episode, in ``EVENTS`` order (events outside the domain's set skipped).

    Every finished episode is scored here, so what the events read is gathered in one pass over the steps;
    each event is exactly what its detector in ``DETECTORS`` returns (``tests/test_hms.py`` compares the
    two)."""
    p = params or DEFAULT_PARAMS
    applies, steps = ep.events, ep.steps
    submit = len(steps) - 1 if ep.submitted else None
    final_hash = steps[-1]["draft_hash"] if ep.submitted else None
    last_check = first_draft = -1
    failures: list[int] = []
    revises: list[int] = []
    tools = valid_tools = 0
    evidence_before_draft = evidence_anywhere = False
    final_check = final_tests = None  # the last check and test run on the submitted draft, before it
    for i, s in enumerate(steps):
        if s["failure"]:
            failures.append(i)
        if "tool" in s:
            tools += 1
            valid_tools += s["tool"]["valid"]
        if s["valid"] and i != submit:
            action = s["action"]
            if action == "CHECK":
                last_check = i
            elif action == "DRAFT":
                if first_draft < 0:
                    first_draft = i
            elif action == "REVISE":
                revises.append(i)
            if s["draft_hash"] == final_hash and submit is not None:
                if "check" in s:
                    final_check = s["check"]
                if "tests" in s and s["tests"]["total"] > 0:
                    final_tests = s["tests"]
        if s.get("evidence"):
            evidence_anywhere = True
            if first_draft < 0:  # a step before the first valid DRAFT
                evidence_before_draft = True

    check_before = evidence_before = test_before = stop = early = False
    if submit is not None:
        if last_check >= 0:
            check_before = not steps[last_check]["check"]["missing"] > 0 or submit - last_check >= 2
        if first_draft >= 0:
            supported = ep.signals.get("claim_support", 0.0) >= p.claim_support
            evidence_before = evidence_before_draft and supported
        if "TestBeforeSubmit" in applies:
            test_before = DETECTORS["TestBeforeSubmit"](ep, p)["fired"]
        t = steps[submit]["t"]
        if t < ep.max_steps:
            for i in range(max(0, submit - p.check_window), submit):
                s = steps[i]
                if s["action"] == "CHECK" and s["valid"] and s["check"]["coverage"] >= p.sufficient_coverage:
                    stop = True
                    break
        quality = ep.G
        early = (
            (quality < p.early_submit_quality and t <= p.early_submit_threshold * ep.max_steps)
            or (final_check is not None and final_check["missing"] >= 0.5)
            or (
                final_tests is not None
                and final_tests["passed"] / final_tests["total"] < p.early_submit_quality
            )
            or (ep.evidence_required and not evidence_anywhere)
        )
    revised = True
    window = p.revision_window
    for i in failures:  # a valid REVISE within the window after each failure signal
        if not any(i < j <= i + window for j in revises):
            revised = False
            break
    found = (
        (check_before, True),
        (evidence_before, True),
        (test_before, True),
        (revised, bool(failures)),
        (tools > 0 and valid_tools / tools >= p.valid_tool_rate, tools > 0),
        (stop, True),
        (early, True),
    )
    return {
        name: {"fired": bool(fired and applicable), "applicable": applicable}
        if name in applies
        else {"fired": False, "applicable": False}
        for name, (fired, applicable) in zip(EVENTS, found, strict=True)
    }


def hms_norm(events: Mapping[str, Event], params: HMSParams | None = None) -> float:
    """Weighted fraction of applicable events fired; in [-1, 1] with the default weights."""
    weights = (params or DEFAULT_PARAMS).weights
    denom = total = 0
    for name, ev in events.items():  # one pass (every episode end), summed in ``sum``'s order
        if ev["applicable"]:
            weight = weights[name]
            denom += abs(weight)
            total += weight * ev["fired"]
    if denom == 0:
        return 0.0
    return total / denom
