"""Measure an executor profile from any executor by designed probe episodes on the train split.

This is how the simulator stands in for a particular LLM: point ``harness-gym calibrate`` at it (the
simulated executor or an OpenAI-compatible endpoint), and it estimates every parameter of the
simulated mechanism (``harness_gym.executors.profiles``) with a 95% confidence interval:

- ``p_correct[d]``: DRAFT with nothing gathered, on train tasks of difficulty d
- ``informed_gain``: DRAFT after the harness gathered all it can (OBSERVE, then every RETRIEVE / CALL_TOOL)
- ``p_tool_correct``: an executor-chosen tool call with nothing gathered (domains with such calls)
- ``p_fix[localised]``: REVISE of a known-flawed draft with the domain check's structural issues
- ``p_fix[verdict]``: REVISE of a known-flawed draft with only a judge's FAIL verdict
- ``p_fix[none]``: REVISE of a known-flawed draft without feedback
- ``fix_decay``: the localised probe as the episode's second REVISE, over the first
- ``p_reflaw``: among unfixed revisions: the output is another wrong artifact, not the input
- ``p_break``: REVISE of the reference without feedback
- ``judge_tpr`` / ``judge_fpr``: judge requests on known-flawed drafts / on the reference

Known-good and known-flawed drafts come from the task's artifact pool; an output counts as correct when
the domain's verifier gives it full marks (G = 1). Rates get Wilson intervals; ``informed_gain`` and
``fix_decay`` (ratios of rates) percentile-bootstrap intervals. ``flaw_weights`` are not measured: they
are kept from the base profile.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.rubric import g_norm
from harness_gym.core.state import HarnessState
from harness_gym.core.task import Task
from harness_gym.envs.domain import VERIFIER_CACHE, Domain, Episode, artifact_hash
from harness_gym.executors.base import Context, Executor, ExecutorRequest, ExecutorResponse, Feedback
from harness_gym.executors.profiles import (
    DIFFICULTIES,
    FEEDBACK_KINDS,
    DomainProfile,
    DraftParams,
    ExecutorProfile,
    Mechanism,
)

Z95 = 1.959963984540054
JUDGE_FAIL = "judge: FAIL: the draft does not meet the task's criteria"
"""The issue a failing judge CHECK hands to REVISE (``Episode.judge``'s wording)."""


@dataclass(frozen=True)
class Estimate:
    """One parameter: point estimate, 95% interval and the number of probes behind it."""

    value: float
    low: float
    high: float
    n: int

    def covers(self, truth: float) -> bool:
        return self.low - 1e-12 <= truth <= self.high + 1e-12


def wilson(successes: int, n: int, z: float = Z95) -> Estimate:
    """Proportion with its Wilson score interval (n = 0 gives the uninformative [0, 1])."""
    if n == 0:
        return Estimate(float("nan"), 0.0, 1.0, 0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), n)


def bootstrap(
    statistic: Callable[..., float], samples: Sequence[np.ndarray], rng: np.random.Generator, reps: int = 1000
) -> Estimate:
    """Percentile bootstrap of a statistic of several independent samples (each resampled on its own)."""
    value = statistic(*samples)
    draws = []
    for _ in range(reps):
        resampled = [s[rng.integers(len(s), size=len(s))] for s in samples]
        draws.append(statistic(*resampled))
    finite = np.asarray([d for d in draws if np.isfinite(d)])
    if not len(finite):
        return Estimate(value, float("nan"), float("nan"), min(len(s) for s in samples))
    low, high = np.percentile(finite, [2.5, 97.5])
    return Estimate(float(value), float(low), float(high), min(len(s) for s in samples))


class _PassingJudge:
    """Wraps an executor so that judge requests pass: a check then reports only its structural issues."""

    name = "passing-judge"

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        if request.kind == "judge":
            return ExecutorResponse(text="PASS")
        return self.inner.complete(request, rng)


@dataclass
class _Probe:
    """What the probes share: the domain, the executor under test and the generator."""

    domain: Domain
    executor: Executor
    rng: np.random.Generator
    max_steps: int

    def episode(self, task: Task, context: Context, draft: str | None, executor: Executor | None = None):
        state = HarnessState(self.domain.name, self.max_steps, self.domain.cost_budget)
        return Episode(
            task=task,
            state=state,
            rng=self.rng,
            executor=executor or self.executor,
            context=context,
            draft=draft,
            draft_hash=None if draft is None else artifact_hash(draft),
        )

    def ask(self, kind: str, task: Task, context: Context, draft: str | None = None, **kw: Any) -> str | None:
        request = ExecutorRequest(kind, task, context, draft, **kw)  # type: ignore[arg-type]
        response = self.executor.complete(request, self.rng)
        return None if response.error is not None else response.text

    def correct(self, task: Task, text: str | None) -> bool:
        if text is None:
            return False
        if text == self.domain.pool(task).reference:
            return True
        verdict = VERIFIER_CACHE.get(
            "calibrate:G",
            task,
            text,
            lambda: g_norm(self.domain.verdict(self.episode(task, Context(), text), text).rubric),
        )
        return verdict >= 1.0 - 1e-9

    def known_flawed(self, task: Task) -> list[str]:
        """The pool's flawed variants that the verifier indeed scores below full marks."""
        return [f.source for f in self.domain.pool(task).flawed if not self.correct(task, f.source)]

    def gathered(self, task: Task) -> Context:
        """OBSERVE, then every legal RETRIEVE and CALL_TOOL before any draft, as far as the budget allows."""
        ep = self.episode(task, Context(), None)
        self.domain.observe(ep)
        ep.context.observed = ep.state.observed = True
        for _ in range(self.max_steps - 3):
            mask = self.domain.action_mask(ep)
            if mask[Action.RETRIEVE]:
                ep.steps.append({"action": "RETRIEVE", "valid": True})
                outcome = self.domain.retrieve(ep)
                ep.context.evidence.extend(outcome.evidence)
                ep.state.evidence += len(outcome.evidence)
            elif mask[Action.CALL_TOOL]:
                ep.steps.append({"action": "CALL_TOOL", "valid": True})
                outcome = self.domain.call_tool(ep)
                ep.state.tool_calls += 1
            else:
                break
            if outcome.tool is not None:
                ep.context.tool_results.append(outcome.text)
        return ep.context

    def structural_feedback(self, task: Task, context: Context, draft: str) -> Feedback | None:
        """The domain check's own issues about this draft (judge passing), or None when it sees none."""
        ep = self.episode(
            task, Context(context.observed, list(context.evidence), list(context.tool_results)), draft
        )
        ep.executor = _PassingJudge(self.executor)
        outcome = self.domain.check(ep)
        issues = tuple(
            i for i in (outcome.feedback.issues if outcome.feedback else ()) if not i.startswith("judge")
        )
        return Feedback("check", artifact_hash(draft), issues) if issues else None


def _cycle(tasks: Sequence[Task], n: int, rng: np.random.Generator) -> list[Task]:
    order = [tasks[i % len(tasks)] for i in range(n)]
    rng.shuffle(order)  # type: ignore[arg-type]
    return order


def calibrate_domain(
    domain: Domain,
    executor: Executor,
    tasks: Sequence[Task],
    probes: int = 200,
    seed: int = 0,
    base: DomainProfile | None = None,
    max_steps: int | None = None,
) -> tuple[DomainProfile, dict[str, Estimate]]:
    """Estimate one domain's profile from ``probes`` requests per probe kind on ``tasks``."""
    if probes < 1:
        raise ValueError(f"probes must be at least 1, got {probes}")
    if not tasks:
        raise ValueError(f"no tasks to calibrate {domain.name} on")
    rng = np.random.default_rng(seed)
    probe = _Probe(domain, executor, rng, max_steps or domain.max_steps)
    base = base or DomainProfile(draft=domain.draft_params)
    out: dict[str, Estimate] = {}

    # first drafts, uninformed and informed
    uninformed: dict[str, list[float]] = defaultdict(list)
    for task in _cycle(tasks, probes * len(DIFFICULTIES), rng):
        uninformed[task.difficulty].append(probe.correct(task, probe.ask("draft", task, Context())))
    contexts = {task.task_id: probe.gathered(task) for task in tasks}
    informed = []  # (difficulty index, informedness, correct)
    for task in _cycle(tasks, probes * 2, rng):
        context = contexts[task.task_id]
        level = domain.informedness(task, context)
        y = probe.correct(task, probe.ask("draft", task, context))
        informed.append((DIFFICULTIES.index(task.difficulty), level, float(y)))
    p_correct = {}
    for d in DIFFICULTIES:
        ys = uninformed.get(d, [])
        out[f"p_correct[{d}]"] = est = wilson(int(sum(ys)), len(ys))
        p_correct[d] = est.value if ys else base.draft.p_correct[d]

    def gain(u_easy: np.ndarray, u_std: np.ndarray, u_hard: np.ndarray, inf: np.ndarray) -> float:
        p = np.array([s.mean() if len(s) else np.nan for s in (u_easy, u_std, u_hard)])
        p = np.where(np.isnan(p), [base.draft.p_correct[d] for d in DIFFICULTIES], p)
        levels = inf[:, 1]
        resid = inf[:, 2] - p[inf[:, 0].astype(int)]
        denom = float((levels**2).sum())
        return float((levels * resid).sum() / denom) if denom > 0 else float("nan")

    samples = [np.asarray(uninformed.get(d, []), dtype=float) for d in DIFFICULTIES]
    out["informed_gain"] = bootstrap(gain, [*samples, np.asarray(informed)], rng)

    try:
        domain.tool_pool(tasks[0], Context())
        has_tools = True
    except NotImplementedError:
        has_tools = False
    if has_tools:
        hits = 0
        for task in _cycle(tasks, probes, rng):
            hits += probe.ask("tool", task, Context()) == domain.tool_pool(task, Context()).reference
        out["p_tool_correct"] = wilson(hits, probes)

    # revisions of known-flawed drafts, by feedback kind
    fixed: dict[str, list[float]] = {kind: [] for kind in FEEDBACK_KINDS}
    second: list[float] = []
    unfixed_changed = []
    for task in _cycle(tasks, probes * 2, rng):
        flawed = probe.known_flawed(task)
        if not flawed:
            continue
        draft = flawed[int(rng.integers(len(flawed)))]
        context = contexts[task.task_id]
        feedback = {
            "localised": probe.structural_feedback(task, context, draft),
            "verdict": Feedback("check", artifact_hash(draft), (JUDGE_FAIL,)),
            "none": None,
        }
        for kind, fb in feedback.items():
            if kind == "localised" and fb is None:
                continue  # a flaw the checks cannot see
            if len(fixed[kind]) >= probes:
                continue
            text = probe.ask("revise", task, context, draft, feedback=fb)
            ok = probe.correct(task, text)
            fixed[kind].append(ok)
            if not ok:
                unfixed_changed.append(text is not None and text != draft)
        if feedback["localised"] is not None and len(second) < probes:
            text = probe.ask("revise", task, context, draft, feedback=feedback["localised"], revision=1)
            second.append(probe.correct(task, text))
    fix_estimates = {kind: wilson(int(sum(v)), len(v)) for kind, v in fixed.items()}
    for kind in FEEDBACK_KINDS:
        out[f"p_fix[{kind}]"] = fix_estimates[kind]
    out["fix_decay"] = bootstrap(
        lambda a, b: float(b.mean() / a.mean()) if len(a) and len(b) and a.mean() > 0 else float("nan"),
        [np.asarray(fixed["localised"], dtype=float), np.asarray(second, dtype=float)],
        rng,
    )
    out["p_reflaw"] = wilson(int(sum(unfixed_changed)), len(unfixed_changed))

    # breaking the reference; the judge on known-good and known-flawed drafts
    broken = alarms_good = alarms_bad = 0
    judged_bad = 0
    for task in _cycle(tasks, probes, rng):
        pool = domain.pool(task)
        context = contexts[task.task_id]
        broken += not probe.correct(task, probe.ask("revise", task, context, pool.reference))
        alarms_good += _alarm(probe.ask("judge", task, context, pool.reference))
        flawed = probe.known_flawed(task)
        if flawed:
            bad = flawed[int(rng.integers(len(flawed)))]
            alarms_bad += _alarm(probe.ask("judge", task, context, bad))
            judged_bad += 1
    out["p_break"] = wilson(broken, probes)
    out["judge_fpr"] = wilson(alarms_good, probes)
    out["judge_tpr"] = wilson(alarms_bad, judged_bad)

    def value(name: str, fallback: float) -> float:
        v = out[name].value if name in out else float("nan")
        return float(min(1.0, max(0.0, v))) if np.isfinite(v) else fallback

    m = base.mechanism
    profile = DomainProfile(
        draft=DraftParams(
            p_correct=p_correct,
            informed_gain=out["informed_gain"].value
            if np.isfinite(out["informed_gain"].value)
            else base.draft.informed_gain,
            flaw_weights=dict(base.draft.flaw_weights),
            p_tool_correct=value("p_tool_correct", base.draft.p_tool_correct),
        ),
        mechanism=Mechanism(
            p_fix={kind: value(f"p_fix[{kind}]", m.p_fix[kind]) for kind in FEEDBACK_KINDS},
            p_break=value("p_break", m.p_break),
            p_reflaw=value("p_reflaw", m.p_reflaw),
            fix_decay=value("fix_decay", m.fix_decay),
            judge_tpr=value("judge_tpr", m.judge_tpr),
            judge_fpr=value("judge_fpr", m.judge_fpr),
        ),
        costs=base.costs,
    )
    return profile, out


def _alarm(text: str | None) -> bool:
    """A judge reply reports a problem unless it starts with PASS (``Episode.judge``'s reading)."""
    return text is None or not text.strip().upper().startswith("PASS")


def truth_of(profile: DomainProfile) -> dict[str, float]:
    """A profile's parameters under the estimate names (to compare a recovery with the truth)."""
    d, m = profile.draft, profile.mechanism
    return {
        **{f"p_correct[{k}]": d.p_correct[k] for k in DIFFICULTIES},
        "informed_gain": d.informed_gain,
        "p_tool_correct": d.p_tool_correct,
        **{f"p_fix[{k}]": m.p_fix[k] for k in FEEDBACK_KINDS},
        "fix_decay": m.fix_decay,
        "p_reflaw": m.p_reflaw,
        "p_break": m.p_break,
        "judge_tpr": m.judge_tpr,
        "judge_fpr": m.judge_fpr,
    }


def table(env_id: str, estimates: dict[str, Estimate]) -> str:
    """The estimates as a fixed-width table."""
    rows = [f"{env_id}", f"  {'parameter':<20} {'estimate':>8}  {'95% interval':<17} {'probes':>6}"]
    for name, e in estimates.items():
        rows.append(f"  {name:<20} {e.value:>8.3f}  [{e.low:6.3f}, {e.high:6.3f}]  {e.n:>6}")
    return "\n".join(rows)


def calibrate_env(
    env_id: str, executor: Any = "simulated", executor_profile: Any = None, probes: int = 200, seed: int = 0
) -> tuple[DomainProfile, dict[str, Estimate]]:
    """Calibrate one environment's domain on its train split with the executor ``gym.make`` would bind."""
    import gymnasium as gym

    env = gym.make(env_id, split="train", executor=executor, executor_profile=executor_profile)
    inner = env.unwrapped
    try:
        return calibrate_domain(
            inner.domain,
            inner.executor,
            inner.tasks,
            probes=probes,
            seed=seed,
            base=replace(inner.executor_profile),
            max_steps=inner.max_steps,
        )
    finally:
        env.close()


def calibrate_profile(
    env_ids: Sequence[str],
    executor: Any = "simulated",
    executor_profile: Any = None,
    probes: int = 200,
    seed: int = 0,
    name: str = "calibrated",
    log: Callable[[str], None] = print,
) -> tuple[ExecutorProfile, dict[str, dict[str, Estimate]]]:
    """Calibrate several environments into one profile, printing each one's table through ``log``."""
    from harness_gym.envs.registry import env_class

    domains, all_estimates = {}, {}
    for env_id in env_ids:
        profile, estimates = calibrate_env(env_id, executor, executor_profile, probes=probes, seed=seed)
        domains[env_class(env_id).domain_cls.name] = profile
        all_estimates[env_id] = estimates
        log(table(env_id, estimates))
    executor_name = getattr(executor, "model", None) or str(executor)
    notes = f"harness-gym calibrate: {probes} probes per kind, seed {seed}, executor {executor_name}"
    return ExecutorProfile(name=name, domains=domains, notes=notes), all_estimates
