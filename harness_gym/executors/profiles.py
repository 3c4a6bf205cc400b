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

Feedback kinds (``feedback_kind``): ``localised`` — fresh feedback on this very draft names the draft's
own flaw: one of its findings comes from a check component that the domain declares as naming that flaw
kind (``Domain.flaws``; e.g. a failing visible test names a behavioural mutant, "cited source never
opened" does not name a wrong figure); ``verdict`` — fresh feedback on this draft that names something
else (another flaw, what the harness has not gathered, or only the LLM judge's bare verdict); ``none`` —
no feedback about this draft, or feedback already used by an earlier REVISE (stale).

Sources of the mechanism figures (weak / default / strong are the low end, the middle and the high end
of each cited range; "assumption" marks a value no figure was found for):

- Localised fix rates by flaw class (``Domain.flaws``: ``form`` — malformed output, a syntax or name
  error, a missing field, the format; ``content`` — a wrong value, logic or step). Repair studies measure
  the two classes far apart, so one rate for both would be the midpoint of two different things:
  ``p_fix["localised"]`` (content) 0.35 / 0.40 / 0.45 — logical errors are repaired below 35% of the time
  with compiler and test feedback over up to ten rounds (Zhang & Kothari, "Unlocking LLM Code Correction
  with Iterative Feedback Loops", arXiv 2606.17514) and about 45% of the time with execution feedback
  ("How Many Tries Does It Take? Iterative Self-Repair in LLM Code Generation", arXiv 2604.10508);
  ``p_fix_form`` 0.77 / 0.785 / 0.80 — name errors about 77% (arXiv 2604.10508), syntactic and runtime
  errors above 80% (Zhang & Kothari). Dai et al. ("FeedbackEval", arXiv 2504.06939) measure 58-64% for a
  single repair round with mixed feedback, between the two classes. Chen et al. 2023 ("Teaching Large
  Language Models to Self-Debug", ICLR 2024) agree in direction: with unit-test feedback self-debugging
  adds up to 12 points, without unit tests 2-3 points. Tyen et al. 2024 ("LLMs cannot find reasoning
  errors, but can correct them given the error location") find correction robust once the *right*
  mistake location is given, mistake finding being the bottleneck: a localised rate applies only when
  the feedback names the draft's own flaw.
- Evidence gating (no parameter of its own): a REVISE of a draft with flaw kind k after r earlier
  revisions fixes it with ``fix_decay**r * (q0 + (p_fix[f] - q0) * e_k)``, where ``f`` is the feedback
  kind (localised rates by class as above), ``e_k`` in [0, 1] how much of what a fix of k needs the
  harness has gathered (``Domain.evidence`` of ``FlawKind.needs``), and ``q0 = min(p_fix["none"],
  p_correct[difficulty])`` the uninformed rate: without the information a fix needs, a revision does no
  better than a blind retry nor than an uninformed first draft. Direction: Huang et al. 2024 (below:
  intrinsic self-correction, with no external information, does not improve answers) and Kamoi et al.
  2024 ("When Can LLMs Actually Correct Their Own Mistakes?", TACL: self-correction works when reliable
  external information is available). Size: CRITIC (Gou et al., ICLR 2024) — critique by the model alone
  changes free-form QA F1 by -0.03 to +2.33, critique with search evidence by +7.0 to +7.7. This is the
  revision analogue of ``p_correct + informed_gain * informedness`` and adds no fitted parameter.
- ``p_fix["none"]`` 0.167 / 0.22 / 0.268 — intrinsic correction rates on GSM8K-Complex errors without
  external feedback, 16.7% (DeepSeek) and 26.8% (GPT-3.5) (Li, "Decomposing LLM Self-Correction", arXiv
  2601.00828); 0.22 is their midpoint.
- ``p_fix["verdict"]`` = ``p_fix["none"]`` (assumption). No measured fix rate after a bare "this is wrong"
  from the model's own judge was found, nor one for feedback that locates a *different* problem than the one
  the draft has (Tyen et al. 2024 measure correction given the *right* location only). Valmeekam et al. 2023
  ("Can Large Language Models Really Improve by Self-critiquing Their Own Plans?") report that binary versus
  detailed feedback made little difference to GPT-4's plans, Stechly et al. 2024 ("On the Self-Verification
  Limitations of LLMs on Reasoning and Planning Tasks") that the content of the critique did not matter, and
  Li (above) that error-location hints did not help: nothing supports a verdict adding to a blind retry.
- ``p_break`` 0.497 / 0.042 / 0.016 — Huang et al. 2024 ("Large Language Models Cannot Self-Correct
  Reasoning Yet", ICLR 2024): intrinsic self-correction lowers accuracy and flips correct answers to
  wrong more often than the reverse. Lower bounds on P(correct -> wrong) from their accuracy drops:
  GPT-3.5 on CommonSenseQA 75.8% -> 38.1% after one round (0.497), GPT-4 on GSM8K 95.5% -> 91.5%
  (0.042), GPT-3.5 on GSM8K 75.9% -> 74.7% over two rounds (0.016).
- ``p_break_feedback`` (MDP v2 only, ``obs_layout="v2"``; layout v1 keeps the single ``p_break`` above, so
  its episodes stay as they were): P(a REVISE breaks a correct draft) by what fresh feedback on that draft
  said (``revision_verdict``):

  - ``none`` 0.497 / 0.042 / 0.016 — intrinsic self-correction, no feedback: Huang et al. 2024's bracket,
    the same figures as ``p_break``.
  - ``fail`` 0.973 / 0.46 / 0.175 — a failing verdict on a correct draft (a false alarm) is a challenge to
    a right answer. FlipFlop (Laban et al. 2023, "Are You Sure? Challenging LLMs Leads to Performance
    Drops in The FlipFlop Experiment", arXiv 2311.08596): after "Are you sure?", ten LLMs on seven
    classification tasks flip their answers 46% of the time on average, and every model loses accuracy
    (17% on average), so flips run mostly from right to wrong; Zhang et al. ("Understanding the Dark Side
    of LLMs' Intrinsic Self-Correction", ACL 2025, arXiv 2412.14959): correct-to-incorrect flips up to
    58.8% (Llama-3.1-8B on BoolQ); Nikeghbal et al. ("Who Flips? Self- and Cross-Model Counterarguments
    Reveal Answer Instability in LLMs", arXiv 2606.16011): after a correct answer is challenged with an
    argument for a wrong option, flip rates of 17.5% to 97.3% across seven frontier models on 57 MMLU
    subjects. Weak and strong are the ends of that range; the default is FlipFlop's 46%, the one figure
    averaged over many models (ten), which lies inside the range and below Zhang et al.'s single worst
    case, where the midpoint of the two extremes (57.4%) would sit almost on that worst case. FlipFlop
    counts flips of any answer, so 0.46 reads it as a correct-to-wrong rate (the accuracy drops say most
    flips go that way).
  - ``pass`` 0.042 / 0.016 / 0.016 (assumption) — a passing verdict confirms the draft; no rate of
    breaking a confirmed right answer was found. Direction: Kumaran et al. 2025 ("How Overconfidence in
    Initial Choices and Underconfidence Under Criticism Modulate Change of Mind in Large Language Models",
    arXiv 2507.03120) find LLMs overweight contradicting advice and barely move on consistent advice, and
    a confirmed answer shown back reinforces itself (choice-supportive bias); so the rate is set at the
    low end of Huang et al.'s bracket (the default profile: its lowest figure, 0.016) and never above
    ``none``.
- ``p_reflaw`` 0.5 (assumption): P(a failed fix of a flawed draft returns another flawed variant
  rather than the same one). Huang et al. observe answers changing in both directions; no rate found.
- ``fix_decay`` 0.5 (assumption): each earlier REVISE in the episode multiplies P(fix) by this. Most
  gains of iterative self-repair come in the first two rounds (arXiv 2604.10508); Huang et al.'s GPT-4
  loses 4.0 points in round one and 2.5 in round two. No per-round rate was found.
- ``judge_tpr`` 0.10 / 0.46 / 0.82 — error detection rates of prompted LLMs on their own GSM8K-Complex
  errors range from 10% to 82% across models (Li, above); Valmeekam et al. 2023 likewise find GPT-4's
  plan verifier passes many invalid plans. Kamoi et al. 2024 ("When Can LLMs Actually Correct Their Own
  Mistakes?", TACL) conclude that feedback from prompted LLMs does not make self-correction work.
- ``temperature`` 0 (``sampling``: 1). The project's real executor (``OpenAIConfig.temperature``) and
  tau-bench's agent (``run.py --temperature``) default to 0. Greedy serving repeats itself: one request
  at a time, 16 of 16 runs identical (Merrison 2026, Qwen2.5-7B on vLLM); under production batching 1,000
  runs of one prompt gave 80 distinct completions sharing their first 102 tokens, 992 on the majority
  branch (He / Thinking Machines Lab 2025, "Defeating Nondeterminism in LLM Inference"), parsed answers
  more stable than raw strings (Atil et al., arXiv 2408.04667). At the default sampling temperature half
  or more of code tasks never repeat an output (Ouyang et al., TOSEM 2024): independent draws. So at 0
  every call's draws come from a hash of the episode key and what its prompt holds (kind, task, whether
  the task was read, evidence ids, tool results, the draft, fresh feedback); any value above 0 is treated
  as sampling (assumption: no figure gives intermediate temperatures a meaning here). The recorded
  SmolLM2 fixture (``tests/data/smollm2_*``) agrees in direction (70 of its 136 calls repeat an earlier
  identical request of the same episode), but there the identical replies are enforced by the response
  cache, which keys greedy calls without a sample index; it is no independent measurement.
- Costs (``CallCosts``, every profile): tokens are characters over ``prompt_chars_per_token`` 3.49 and
  ``completion_chars_per_token`` 3.70, measured on the recorded SmolLM2 run (``tests/data/smollm2_*``, 33
  requests, server-reported token counts; prompt range 2.66-4.39); a judge's reply is
  ``judge_completion_tokens`` 53, the mean of its 7 recorded judge replies (10-120), since a real judge
  gives a reason. Latency is ``ttft_s + completion_tokens / decode_tokens_per_s`` with 0.5 s and 60 tok/s,
  assumptions inside the cited ranges: median time to first token 0.32-4.2 s and median throughput
  24.7-252 tok/s over 15 hosted models (Wrede 2026, hourly OpenRouter probes), p50 0.05-0.6 s at
  500-token prompts (deploybase.ai 2026); the recorded run cannot give a latency model (one CPU thread,
  R^2 0.16). Work that is not a model call (tests, SQL, tool runs) costs no modelled time. Bai et al.
  ("How Do AI Agents Spend Your Money?", arXiv 2604.22750) find input tokens drive agent cost, which is
  why the prompt side is sized from what was gathered.
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
    from harness_gym.executors.base import Feedback, FlawKind

DIFFICULTIES: tuple[str, ...] = ("easy", "standard", "hard")
FEEDBACK_KINDS: tuple[str, ...] = ("localised", "verdict", "none")
REVISION_VERDICTS: tuple[str, ...] = ("none", "fail", "pass")
"""What fresh feedback on a correct draft said before a REVISE (``revision_verdict``)."""
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
        default_factory=lambda: {"localised": 0.40, "verdict": 0.22, "none": 0.22}
    )
    """P(the first REVISE turns a flawed draft into the reference, with everything it needs gathered), by
    ``feedback_kind``; ``localised`` is the rate for a content flaw (form flaws: ``p_fix_form``)."""
    p_fix_form: float = 0.785
    """The localised rate for a flaw of the artifact's form (``FlawKind.cls == "form"``)."""
    p_break: float = 0.042
    """P(a REVISE turns a correct draft into a flawed one) in MDP v1 (layout v1), whatever the feedback."""
    p_break_feedback: Mapping[str, float] = field(
        default_factory=lambda: {"none": 0.042, "fail": 0.46, "pass": 0.016}
    )
    """MDP v2 (layout v2): P(a REVISE breaks a correct draft) by ``revision_verdict``."""
    p_reflaw: float = 0.5
    """P(a REVISE that did not fix a flawed draft returns a different flawed variant, not the same)."""
    fix_decay: float = 0.5
    """P(fix) is multiplied by this for every earlier REVISE in the episode (diminishing returns)."""
    judge_tpr: float = 0.46
    """P(the LLM judge reports a problem | the draft is flawed)."""
    judge_fpr: float = 0.15
    """P(the LLM judge reports a problem | the draft is correct)."""
    temperature: float = 0.0
    """0: greedy decoding, every call's outcome a function of the episode and what its prompt holds, so
    an identical request in an episode gets the identical reply; > 0: independent draws per call."""

    def __post_init__(self) -> None:
        if set(self.p_fix) != set(FEEDBACK_KINDS):
            raise ValueError(
                f"p_fix needs exactly the feedback kinds {FEEDBACK_KINDS}, got {sorted(self.p_fix)}"
            )
        for kind in FEEDBACK_KINDS:
            _check_probability(f"p_fix[{kind!r}]", self.p_fix[kind])
        if set(self.p_break_feedback) != set(REVISION_VERDICTS):
            raise ValueError(
                f"p_break_feedback needs exactly the verdicts {REVISION_VERDICTS}, "
                f"got {sorted(self.p_break_feedback)}"
            )
        for verdict in REVISION_VERDICTS:
            _check_probability(f"p_break_feedback[{verdict!r}]", self.p_break_feedback[verdict])
        for name in ("p_fix_form", "p_break", "p_reflaw", "fix_decay", "judge_tpr", "judge_fpr"):
            _check_probability(name, getattr(self, name))
        if not float(self.temperature) >= 0.0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")

    def p_fix_after(
        self,
        kind: str,
        earlier_revisions: int,
        flaw_class: str = "content",
        uninformed: float | None = None,
        evidence: float = 1.0,
    ) -> float:
        """P(a REVISE fixes the draft): the rate of ``kind`` (by ``flaw_class`` when localised), moved
        towards the ``uninformed`` rate as ``evidence`` (in [0, 1]) falls, times ``fix_decay`` per earlier
        revision (module docstring, "Evidence gating")."""
        rate = self.p_fix_form if kind == "localised" and flaw_class == "form" else self.p_fix[kind]
        if uninformed is not None:
            q0 = min(uninformed, rate)
            rate = q0 + (rate - q0) * evidence
        return rate * self.fix_decay ** max(0, earlier_revisions)


@dataclass(frozen=True)
class CallCosts:
    """What a simulated call costs (module docstring, "Costs"): tokens from characters, and seconds."""

    prompt_chars_per_token: float = 3.49
    completion_chars_per_token: float = 3.70
    judge_completion_tokens: int = 53
    ttft_s: float = 0.5
    """Seconds to the first token."""
    decode_tokens_per_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("prompt_chars_per_token", "completion_chars_per_token", "decode_tokens_per_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.judge_completion_tokens < 0 or self.ttft_s < 0:
            raise ValueError("judge_completion_tokens and ttft_s must be non-negative")

    def latency_s(self, completion_tokens: int) -> float:
        return self.ttft_s + completion_tokens / self.decode_tokens_per_s


@dataclass(frozen=True)
class DomainProfile:
    """The simulated executor in one domain."""

    draft: DraftParams = field(default_factory=DraftParams)
    mechanism: Mechanism = field(default_factory=Mechanism)
    costs: CallCosts = field(default_factory=CallCosts)
    """Usage accounting: tokens and seconds per call."""


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
                    costs=CallCosts(**entry.get("costs", {})),
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
        p_fix={"localised": 0.35, "verdict": 0.167, "none": 0.167},
        p_fix_form=0.77,
        p_break=0.497,
        p_break_feedback={"none": 0.497, "fail": 0.973, "pass": 0.042},
        judge_tpr=0.10,
        judge_fpr=0.20,
    ),
    "default": Mechanism(),
    "strong": Mechanism(
        p_fix={"localised": 0.45, "verdict": 0.268, "none": 0.268},
        p_fix_form=0.80,
        p_break=0.016,
        p_break_feedback={"none": 0.016, "fail": 0.175, "pass": 0.016},
        judge_tpr=0.82,
        judge_fpr=0.15,
    ),
    "sampling": Mechanism(temperature=1.0),
}
"""The named mechanisms: low end, middle and high end of the cited ranges (module docstring), and the
default one sampled at temperature 1 (repeated calls draw independently)."""

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


def feedback_kind(feedback: Feedback | None, draft_hash: str | None, flaw: FlawKind) -> str:
    """What the feedback handed to a REVISE says about the draft's own flaw (``FEEDBACK_KINDS``).

    ``localised`` when fresh feedback on this draft has a finding from a component that names the flaw
    (``FlawKind.named_by``), ``verdict`` when fresh feedback names only other things (the judge's finding
    names nothing), ``none`` without fresh feedback on this draft.
    """
    if feedback is None or not feedback.localizes(draft_hash):
        return "none"
    return "localised" if feedback.components & flaw.named_by else "verdict"


def revision_verdict(feedback: Feedback | None, draft_hash: str | None) -> str:
    """What fresh feedback on the draft a REVISE gets said of it (``REVISION_VERDICTS``): ``fail`` when it
    reported problems, ``pass`` when a check or test run on this very draft found none, ``none`` without
    fresh feedback on it (never checked, or feedback on an earlier draft or already used)."""
    if feedback is None or feedback.draft_hash != draft_hash:
        return "none"
    return "fail" if feedback.issues else "pass"
