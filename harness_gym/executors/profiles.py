"""Executor profiles: every parameter of the simulated executor's mechanism, per domain, in one type.

A profile says how a simulated LLM behaves in each domain. It has two parts per domain:

- ``DraftParams`` — what the Base harness exercises: P(correct draft) per difficulty and how much it
  rises with what the harness gathered (``informed_gain``), the mix of flaw kinds in wrong drafts and
  P(an executor-chosen tool call is right). Each domain declares its own (``Domain.draft_params``), fitted
  so that the Base harness reproduces the paper's Base G; they are the same in every named profile.
- ``Mechanism`` — what only checking and revising exercise (Base never does either), so nothing in the
  paper can fit them: P(a REVISE fixes a flawed draft) by the kind of feedback it got, P(it breaks a
  correct draft), P(a failed fix returns a *different* flaw), how fast repeated fixes lose power, and the
  LLM judge's true- and false-alarm rates. They come from published measurements of LLM self-correction
  (below); ``harness-gym calibrate`` measures them for any executor instead.

Feedback kinds (``feedback_kind``): ``localised`` — a structural check or a test run reported concrete
problems in this very draft; ``verdict`` — only the LLM judge complained (the checks themselves see
nothing: the flaw is one the domain's checks cannot see), a bare verdict without a location; ``none`` —
no feedback about this draft, or feedback already used by an earlier REVISE (stale).

Sources of the mechanism figures (weak / default / strong are the low end, the middle and the high end
of each cited range; "assumption" marks a value no figure was found for):

- ``p_fix["localised"]`` 0.45 / 0.61 / 0.77 — iterative self-repair with execution-error feedback across
  seven models on HumanEval and MBPP ("How Many Tries Does It Take? Iterative Self-Repair in LLM Code
  Generation", arXiv 2604.10508): logical (assertion) errors are repaired about 45% of the time, name
  errors about 77%. Used as the first attempt's rate. Chen et al. 2023 ("Teaching Large Language Models
  to Self-Debug", ICLR 2024) agree in direction: with unit-test feedback self-debugging adds up to 12
  points (TransCoder, MBPP), without unit tests 2-3 points (Spider). Tyen et al. 2024 ("LLMs cannot find
  reasoning errors, but can correct them given the error location") find correction robust once the
  mistake location is given, mistake finding being the bottleneck.
- ``p_fix["none"]`` 0.167 / 0.22 / 0.268 — intrinsic correction rates on GSM8K-Complex errors without
  external feedback, 16.7% (DeepSeek) and 26.8% (GPT-3.5) (Li, "Decomposing LLM Self-Correction", arXiv
  2601.00828); 0.22 is their midpoint.
- ``p_fix["verdict"]`` = ``p_fix["none"]`` (assumption). No measured fix rate after a bare "this is
  wrong" from the model's own judge was found. Valmeekam et al. 2023 ("Can Large Language Models Really
  Improve by Self-critiquing Their Own Plans?") report that binary versus detailed feedback made little
  difference to GPT-4's plans, Stechly et al. 2024 ("On the Self-Verification Limitations of LLMs on
  Reasoning and Planning Tasks") that the content of the critique did not matter, and Li (above) that
  error-location hints did not help: nothing supports a verdict adding to a blind retry.
- ``p_break`` 0.497 / 0.042 / 0.016 — Huang et al. 2024 ("Large Language Models Cannot Self-Correct
  Reasoning Yet", ICLR 2024): intrinsic self-correction lowers accuracy and flips correct answers to
  wrong more often than the reverse. Lower bounds on P(correct -> wrong) from their accuracy drops:
  GPT-3.5 on CommonSenseQA 75.8% -> 38.1% after one round (0.497), GPT-4 on GSM8K 95.5% -> 91.5%
  (0.042), GPT-3.5 on GSM8K 75.9% -> 74.7% over two rounds (0.016).
- ``p_reflaw`` 0.5 (assumption): P(a failed fix of a flawed draft returns another flawed variant
  rather than the same one). Huang et al. observe answers changing in both directions; no rate found.
- ``fix_decay`` 0.5 (assumption): each earlier REVISE in the episode multiplies P(fix) by this. Most
  gains of iterative self-repair come in the first two rounds (arXiv 2604.10508); Huang et al.'s GPT-4
  loses 4.0 points in round one and 2.5 in round two. No per-round rate was found.
- ``judge_tpr`` 0.10 / 0.46 / 0.82 — error detection rates of prompted LLMs on their own GSM8K-Complex
  errors range from 10% to 82% across models (Li, above); Valmeekam et al. 2023 likewise find GPT-4's
  plan verifier passes many invalid plans. Kamoi et al. 2024 ("When Can LLMs Actually Correct Their Own
  Mistakes?", TACL) conclude that feedback from prompted LLMs does not make self-correction work.
- ``judge_fpr`` 0.20 / 0.15 / 0.15 — Zheng et al. 2023 ("Judging LLM-as-a-Judge with MT-Bench and
  Chatbot Arena"): GPT-4 as a judge agrees with human experts over 80% of the time (about 85% without
  ties), the level of agreement between humans; the disagreement is taken as the false-alarm rate.

The mechanism figures are shared by every domain: none of the sources measures our domains separately.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_gym.executors.base import Feedback

DIFFICULTIES: tuple[str, ...] = ("easy", "standard", "hard")
FEEDBACK_KINDS: tuple[str, ...] = ("localised", "verdict", "none")
PROFILE_ENV = "HARNESS_GYM_EXECUTOR_PROFILE"
"""Environment variable naming the profile (name or JSON path) used when none is passed."""


class ProfileError(ValueError):
    """A malformed or unknown executor profile (reported in one line by the CLI)."""


def _check_probability(where: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{where} must lie in [0, 1], got {value!r}")


@dataclass(frozen=True)
class DraftParams:
    """What the Base harness exercises: first-draft accuracy, flaw mix, tool-choice accuracy."""

    p_correct: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(DIFFICULTIES, 0.5))
    """P(the draft is the reference) for an uninformed executor, per difficulty."""
    informed_gain: float = 0.2
    """Added to ``p_correct`` when the harness gathered everything relevant (informedness 1)."""
    flaw_weights: Mapping[str, float] = field(default_factory=dict)
    """Relative frequency of each flaw kind in wrong drafts (unlisted kinds weigh 1)."""
    p_tool_correct: float = 0.85
    """P(an executor-chosen tool call is the right one with valid arguments)."""

    def __post_init__(self) -> None:
        missing = [d for d in DIFFICULTIES if d not in self.p_correct]
        if missing:
            raise ValueError(f"p_correct lacks difficulty level(s) {missing}")
        for d in DIFFICULTIES:
            _check_probability(f"p_correct[{d!r}]", self.p_correct[d])
        _check_probability("p_tool_correct", self.p_tool_correct)
        if any(w < 0 for w in self.flaw_weights.values()):
            raise ValueError("flaw_weights must be non-negative")

    def p_draft_correct(self, difficulty: str, informedness: float) -> float:
        return min(1.0, max(0.0, self.p_correct[difficulty] + self.informed_gain * informedness))


@dataclass(frozen=True)
class Mechanism:
    """What only CHECK and REVISE exercise; defaults are the ``default`` profile's (see the module doc)."""

    p_fix: Mapping[str, float] = field(
        default_factory=lambda: {"localised": 0.61, "verdict": 0.22, "none": 0.22}
    )
    """P(the first REVISE turns a flawed draft into the reference), by ``feedback_kind``."""
    p_break: float = 0.042
    """P(a REVISE turns a correct draft into a flawed one)."""
    p_reflaw: float = 0.5
    """P(a REVISE that did not fix a flawed draft returns a different flawed variant, not the same)."""
    fix_decay: float = 0.5
    """P(fix) is multiplied by this for every earlier REVISE in the episode (diminishing returns)."""
    judge_tpr: float = 0.46
    """P(the LLM judge reports a problem | the draft is flawed)."""
    judge_fpr: float = 0.15
    """P(the LLM judge reports a problem | the draft is correct)."""

    def __post_init__(self) -> None:
        if set(self.p_fix) != set(FEEDBACK_KINDS):
            raise ValueError(
                f"p_fix needs exactly the feedback kinds {FEEDBACK_KINDS}, got {sorted(self.p_fix)}"
            )
        for kind in FEEDBACK_KINDS:
            _check_probability(f"p_fix[{kind!r}]", self.p_fix[kind])
        for name in ("p_break", "p_reflaw", "fix_decay", "judge_tpr", "judge_fpr"):
            _check_probability(name, getattr(self, name))

    def p_fix_after(self, kind: str, earlier_revisions: int) -> float:
        return self.p_fix[kind] * self.fix_decay ** max(0, earlier_revisions)


@dataclass(frozen=True)
class DomainProfile:
    """The simulated executor in one domain."""

    draft: DraftParams = field(default_factory=DraftParams)
    mechanism: Mechanism = field(default_factory=Mechanism)
    tokens_per_char: float = 0.25
    """Usage accounting: tokens are estimated from text length."""


@dataclass(frozen=True)
class ExecutorProfile:
    """A named simulated LLM: one ``DomainProfile`` per domain name; JSON-serialisable."""

    name: str
    domains: Mapping[str, DomainProfile]
    notes: str = ""

    def domain(self, name: str) -> DomainProfile:
        try:
            return self.domains[name]
        except KeyError:
            raise ValueError(
                f"executor profile {self.name!r} has no parameters for domain {name!r} "
                f"(it covers {', '.join(sorted(self.domains)) or 'none'})"
            ) from None

    def with_domain(self, name: str, profile: DomainProfile) -> ExecutorProfile:
        return replace(self, domains={**self.domains, name: profile})

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "notes": self.notes,
            "domains": {name: asdict(p) for name, p in sorted(self.domains.items())},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExecutorProfile:
        try:
            domains = {
                name: DomainProfile(
                    draft=DraftParams(**entry["draft"]),
                    mechanism=Mechanism(**entry["mechanism"]),
                    tokens_per_char=float(entry.get("tokens_per_char", 0.25)),
                )
                for name, entry in data["domains"].items()
            }
            return cls(name=str(data["name"]), domains=domains, notes=str(data.get("notes", "")))
        except KeyError as exc:
            raise ProfileError(f"not an executor profile: missing key {exc}") from None
        except (TypeError, AttributeError, ValueError) as exc:
            raise ProfileError(f"not an executor profile: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ExecutorProfile:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ProfileError(f"cannot read executor profile {str(path)!r}: {exc}") from None
        try:
            return cls.from_dict(data)
        except ProfileError as exc:
            raise ProfileError(f"executor profile {str(path)!r}: {exc}") from None


MECHANISMS: dict[str, Mechanism] = {
    "weak": Mechanism(
        p_fix={"localised": 0.45, "verdict": 0.167, "none": 0.167},
        p_break=0.497,
        judge_tpr=0.10,
        judge_fpr=0.20,
    ),
    "default": Mechanism(),
    "strong": Mechanism(
        p_fix={"localised": 0.77, "verdict": 0.268, "none": 0.268},
        p_break=0.016,
        judge_tpr=0.82,
        judge_fpr=0.15,
    ),
}
"""The named mechanisms: low end, middle and high end of the cited ranges (module docstring)."""

PROFILE_NAMES: tuple[str, ...] = tuple(MECHANISMS)


def named(name: str, domains: Mapping[str, DraftParams]) -> ExecutorProfile:
    """A shipped profile over ``domains`` (domain name -> its ``draft_params``) with the named mechanism."""
    if name not in MECHANISMS:
        raise ValueError(
            f"unknown executor profile {name!r}; expected one of {', '.join(PROFILE_NAMES)} or a JSON path"
        )
    mechanism = MECHANISMS[name]
    return ExecutorProfile(
        name=name,
        domains={
            domain: DomainProfile(draft=draft, mechanism=mechanism) for domain, draft in domains.items()
        },
        notes="harness_gym.executors.profiles: cited ranges",
    )


def resolve(
    spec: ExecutorProfile | Mapping[str, Any] | str | os.PathLike[str] | None,
    domains: Mapping[str, DraftParams],
) -> ExecutorProfile:
    """A profile from a profile, its dict (``to_dict``'s form), a shipped name, a JSON path, or None
    (``$HARNESS_GYM_EXECUTOR_PROFILE``, else ``default``). A shipped name is built over ``domains``
    (domain name -> its ``draft_params``); ``harness_gym.envs.registry.executor_profile`` passes every
    registered domain's."""
    if isinstance(spec, ExecutorProfile):
        return spec
    if isinstance(spec, Mapping):
        return ExecutorProfile.from_dict(spec)
    if spec is None:
        spec = os.environ.get(PROFILE_ENV) or "default"
    if not isinstance(spec, str | os.PathLike):
        raise TypeError(
            f"executor_profile must be a profile, a dict, a name or a path, got {type(spec).__name__}"
        )
    text = os.fspath(spec)
    if text in MECHANISMS:
        return named(text, domains)
    if Path(text).is_file():
        return ExecutorProfile.load(text)
    raise ProfileError(
        f"unknown executor profile {text!r}: not one of {', '.join(PROFILE_NAMES)} and no such file"
    )


def for_domain(
    spec: ExecutorProfile | Mapping[str, Any] | str | os.PathLike[str] | None, domain_cls: Any
) -> DomainProfile:
    """One domain's profile from any ``resolve`` spec; a shipped name needs only that domain's class."""
    if spec is None:
        spec = os.environ.get(PROFILE_ENV) or "default"
    if isinstance(spec, str) and spec in MECHANISMS:
        return DomainProfile(draft=domain_cls.draft_params, mechanism=MECHANISMS[spec])
    return resolve(spec, {domain_cls.name: domain_cls.draft_params}).domain(domain_cls.name)


def feedback_kind(feedback: Feedback | None, draft_hash: str | None) -> str:
    """How much the feedback handed to a REVISE localises the draft's fault (``FEEDBACK_KINDS``).

    Judge issues are reported as ``"judge: ..."`` / ``"judge error: ..."``; any other issue comes from a
    structural check, a test run or a tool and names a concrete problem.
    """
    if feedback is None or not feedback.localizes(draft_hash):
        return "none"
    if all(issue.startswith("judge") for issue in feedback.issues):
        return "verdict"
    return "localised"
