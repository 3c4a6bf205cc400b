"""Measure an executor profile from any executor by designed probe requests on the train split.

This is how the simulator stands in for a particular LLM: point ``harness-gym calibrate`` at it (the
simulated executor or an OpenAI-compatible endpoint), and it estimates the simulated mechanism's
parameters (``harness_gym.executors.profiles``) with a 95% confidence interval:

- ``p_correct[d]``: DRAFT with nothing gathered, on train tasks of difficulty d
- ``informed_gain``: DRAFT after the harness gathered all it can (OBSERVE, then every RETRIEVE / CALL_TOOL)
- ``p_tool_correct``: an executor-chosen tool call with nothing gathered (domains with such calls)
- ``p_fix[localised]`` / ``p_fix_form``: REVISE of a known-flawed draft whose flaw is of class content /
  form (``Domain.flaws``), with the domain check's structural issues when they name that flaw, after the
  harness gathered everything the fix needs (the executor's rate at full evidence); a draft whose check
  names only something else, or whose fix lacks evidence, is no probe of either
- ``p_fix[verdict]``: REVISE of a known-flawed draft with only a judge's FAIL verdict
- ``p_fix[none]``: REVISE of a known-flawed draft without feedback
- ``fix_decay``: the localised probe as the episode's second REVISE, over the first
- ``p_reflaw``: among unfixed revisions: the output is another wrong artifact, not the input
- ``p_break``: REVISE of the reference without feedback
- ``judge_tpr`` / ``judge_fpr``: judge requests on known-flawed drafts / on the reference

Known-good and known-flawed drafts come from the task's artifact pool; an output counts as correct when
the domain's verifier gives it full marks (G = 1). Rates get Wilson intervals; ``informed_gain`` and
``fix_decay`` (ratios of rates) percentile-bootstrap intervals.

A reply without an answer in the required form (any executor error: a parse failure, a truncated or
empty reply, a tool call, a refusal, a context overflow) is never read as an answer. It counts as what
the harness would do with it: no draft (a DRAFT probe is not correct), the draft unchanged (a REVISE
neither fixes nor breaks nor re-flaws it); a judge reply without a verdict is left out of the judge's
rates altogether. Every probe's share of such replies is reported (``Estimate.failed``). A parameter
whose probes *all* went unanswered measured nothing, whatever its rate says (a model that never answers
drafts nothing correct, but that is no ``p_correct`` of 0): it keeps the base value and is marked
``unmeasured`` (:func:`provenance`), and ``harness-gym calibrate`` exits non-zero naming it.

``p_correct[d]`` probes are stratified: ``probes`` of them on the tasks of each difficulty d (when the
split has any), so a rare difficulty is measured as often as a common one.

Every parameter of the profile's ``DraftParams`` and ``Mechanism`` that no probe measured (a field the
probes do not cover, such as ``flaw_weights``, or one whose probes all went unanswered) keeps the base
profile's value and is marked ``not measured (from <base profile>)`` (:func:`provenance`); the probe
design reads the dataclasses' fields, so a field added to either is reported rather than silently
filled.

Probe requests are planned first (task order and draft choices from the seed) and then sent, each with
a generator and an episode key of its own (``ExecutorRequest.episode_key``), ``concurrency`` at a time:
the estimates do not depend on the concurrency. A :class:`ProbeLog` keeps every answer as it comes, so
a calibration stopped by the endpoint (its deadline passed, a spend guard) resumes where it stopped; the
first failing request stops the others. A simulated executor at temperature 0 then answers each
probe as in a separate episode. A real model at temperature 0 answers a repeated identical probe (the
same task, draft and feedback: tasks are cycled when there are fewer tasks than probes) identically, so
its intervals rest on fewer independent replies than ``probes`` says; give it more tasks than probes,
or sample (temperature above 0), to measure a per-call rate.
:func:`validate_env` then checks the fitted profile where it matters: the Base harness on held-out train
tasks, through the executor itself (measured G) and through the simulator with the fitted profile
(predicted G). Episodes that repeat one another call for call (a greedy model: the same task over seeds)
are one draw; each task's mean G is the unit, the intervals resample tasks, and the verdict is whether
the paired per-task difference's 95% interval holds 0 (``consistent`` / ``not consistent``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.rubric import g_norm
from harness_gym.core.state import HarnessState
from harness_gym.core.task import Task
from harness_gym.envs.domain import VERIFIER_CACHE, Domain, Episode, artifact_hash
from harness_gym.executors.base import (
    Context,
    Executor,
    ExecutorRequest,
    ExecutorResponse,
    Feedback,
    FlawKind,
)
from harness_gym.executors.profiles import (
    DIFFICULTIES,
    FEEDBACK_KINDS,
    PROFILE_ENV,
    DomainProfile,
    ExecutorProfile,
    feedback_kind,
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
    """Probes the estimate rests on (a judge's: the replies that gave a verdict)."""
    failed: int = 0
    """Probe requests whose reply held no answer in the required form (an executor error)."""
    attempts: int | None = None
    """Probe requests sent for it (None: ``n``)."""

    @property
    def failure_rate(self) -> float:
        """Share of the probe requests that got no answer in form (NaN without requests)."""
        sent = self.n if self.attempts is None else self.attempts
        return self.failed / sent if sent else float("nan")

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


class ProbeLog:
    """Every probe answer as it comes, one JSON line each after a manifest line (the calibration's
    settings): a calibration stopped part way reruns and asks only what is missing. A file written with
    other settings is refused."""

    def __init__(self, path: str | os.PathLike[str], manifest: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.manifest = json.loads(json.dumps(dict(manifest), sort_keys=True, default=str))
        self._lock = threading.Lock()
        self.answers: dict[str, dict[str, str | None]] = defaultdict(dict)
        if self.path.exists():
            lines = self.path.read_text(encoding="utf-8").splitlines()
            found = json.loads(lines[0]).get("manifest") if lines else None
            if found != self.manifest:
                raise ValueError(
                    f"the calibration checkpoint {self.path} was written with other settings; rerun with "
                    "the same ones, or delete it to start again"
                )
            for line in lines[1:]:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a kill: that answer is asked again
                    continue
                self.answers[entry["env"]][entry["key"]] = entry["answer"]
        else:
            self.path.write_text(json.dumps({"manifest": self.manifest}) + "\n", encoding="utf-8")

    def __len__(self) -> int:
        return sum(len(a) for a in self.answers.values())

    def record(self, env_id: str, key: str, answer: str | None) -> None:
        with self._lock:
            self.answers[env_id][key] = answer
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"env": env_id, "key": key, "answer": answer}) + "\n")

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class _PassingJudge:
    """Wraps an executor so that judge requests pass: a check then reports only its structural issues."""

    name = "passing-judge"

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        if request.kind == "judge":
            return ExecutorResponse(text="PASS")
        return self.inner.complete(request, rng)


class _Stopped(Exception):
    """Internal: a probe left unasked because another one failed."""


@dataclass(frozen=True)
class _Ask:
    """One planned probe request."""

    kind: str
    task: Task
    context: Context
    draft: str | None = None
    feedback: Feedback | None = None
    revision: int = 0


@dataclass
class _Probe:
    """What the probes share: the domain, the executor under test, the seed and the concurrency."""

    domain: Domain
    executor: Executor
    seed: int
    max_steps: int
    concurrency: int = 1
    stage: int = 0
    env_id: str = ""
    log: ProbeLog | None = None
    progress: Callable[[int, int], None] | None = None
    """``progress(answered, total)`` after every probe answer (resumed ones included)."""
    _stop: threading.Event = field(default_factory=threading.Event)

    def episode(
        self, task: Task, context: Context, draft: str | None, rng: np.random.Generator, executor: Any = None
    ) -> Episode:
        state = HarnessState(self.domain.name, self.max_steps, self.domain.cost_budget)
        return Episode(
            task=task,
            state=state,
            rng=rng,
            executor=executor or self.executor,
            context=context,
            draft=draft,
            draft_hash=None if draft is None else artifact_hash(draft),
        )

    def map(self, function: Callable[[int, Any], Any], items: Sequence[Any]) -> list[Any]:
        """``function(i, item)`` over ``items``, ``concurrency`` at a time, results in order."""
        if self.concurrency <= 1 or len(items) <= 1:
            return [function(i, item) for i, item in enumerate(items)]
        with ThreadPoolExecutor(self.concurrency) as pool:
            return list(pool.map(function, range(len(items)), items))

    def ask_all(self, asks: Sequence[_Ask]) -> list[str | None]:
        """Each request's answer, or None when the reply held none (an executor error of any kind)."""
        self.stage += 1
        stage = self.stage
        kept = self.log.answers.get(self.env_id, {}) if self.log is not None else {}
        counter = [0]
        lock = threading.Lock()

        def tick() -> None:
            if self.progress is not None:
                with lock:
                    counter[0] += 1
                    self.progress(counter[0], len(asks))

        def one(i: int, ask: _Ask) -> str | None:
            key = f"{stage}/{i}"
            if key in kept:
                tick()
                return kept[key]
            if self._stop.is_set():  # another request failed: the calibration stops
                raise _Stopped
            try:
                answer = self._ask(stage, i, ask)
            except BaseException:
                self._stop.set()
                raise
            if self.log is not None:
                self.log.record(self.env_id, key, answer)
            tick()
            return answer

        try:
            return self.map(one, asks)
        except _Stopped:  # pragma: no cover - the failing request's own exception is raised first
            raise RuntimeError("a probe request failed") from None

    def _ask(self, stage: int, i: int, ask: _Ask) -> str | None:
        """One probe's answer, or None when the reply held none (an executor error of any kind)."""
        request = ExecutorRequest(
            ask.kind,  # type: ignore[arg-type]
            ask.task,
            ask.context,
            ask.draft,
            ask.feedback,
            revision=ask.revision,
            episode_key=probe_key(self.seed, stage, i),
        )
        response = self.executor.complete(request, np.random.default_rng([self.seed, stage, i]))
        return None if response.error is not None else response.text

    def correct(self, task: Task, text: str | None) -> bool:
        if text is None:
            return False
        if text == self.domain.pool(task).reference:
            return True
        rng = np.random.default_rng(self.seed)
        verdict = VERIFIER_CACHE.get(
            "calibrate:G",
            task,
            text,
            lambda: g_norm(self.domain.verdict(self.episode(task, Context(), text, rng), text).rubric),
        )
        return verdict >= 1.0 - 1e-9

    def flaw_of(self, task: Task, draft: str) -> FlawKind:
        """The declared flaw kind of a pool draft (``Domain.flaws``)."""
        kind = next(f.flaw for f in self.domain.pool(task).flawed if f.source == draft)
        return self.domain.flaws[kind]

    def known_flawed(self, task: Task) -> list[str]:
        """The pool's flawed variants that the verifier indeed scores below full marks."""
        return [f.source for f in self.domain.pool(task).flawed if not self.correct(task, f.source)]

    def gathered(self, index: int, task: Task) -> Context:
        """OBSERVE, then every legal RETRIEVE and CALL_TOOL before any draft, as far as the budget allows."""
        ep = self.episode(task, Context(), None, np.random.default_rng([self.seed, 0, index]))
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
        context = Context(context.observed, list(context.evidence), list(context.tool_results))
        rng = np.random.default_rng(self.seed)
        ep = self.episode(task, context, draft, rng, executor=_PassingJudge(self.executor))
        outcome = self.domain.check(ep)
        issues = tuple(
            i for i in (outcome.feedback.issues if outcome.feedback else ()) if not i.startswith("judge")
        )
        return Feedback("check", artifact_hash(draft), issues) if issues else None


def probe_key(seed: int, stage: int, index: int) -> int:
    """The episode key of one probe request: every probe stands for an episode of its own."""
    digest = hashlib.blake2b(f"calibrate/{seed}/{stage}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _cycle(tasks: Sequence[Task], n: int, rng: np.random.Generator) -> list[Task]:
    order = [tasks[i % len(tasks)] for i in range(n)]
    rng.shuffle(order)  # type: ignore[arg-type]
    return order


def _rate(hits: Sequence[bool], failed: int, attempts: int) -> Estimate:
    return replace(wilson(int(sum(hits)), len(hits)), failed=failed, attempts=attempts)


REVISION_PROBES: dict[str, str] = {
    "content, named": "p_fix[localised]",
    "form, named": "p_fix_form",
    "verdict": "p_fix[verdict]",
    "none": "p_fix[none]",
}
"""The REVISE probes and the parameter each estimates (``Mechanism.p_fix`` by feedback kind, the
localised rate by flaw class)."""
LOCALISED = frozenset({"p_fix[localised]", "p_fix_form"})

UNBOUNDED = frozenset({"informed_gain"})
"""Parameters that are not probabilities (every other measured value is clipped to [0, 1])."""


def calibrate_domain(
    domain: Domain,
    executor: Executor,
    tasks: Sequence[Task],
    probes: int = 200,
    seed: int = 0,
    base: DomainProfile | None = None,
    max_steps: int | None = None,
    concurrency: int = 1,
    log: ProbeLog | None = None,
    progress: Callable[[int, int], None] | None = None,
    env_id: str = "",
) -> tuple[DomainProfile, dict[str, Estimate]]:
    """Estimate one domain's profile from ``probes`` requests per probe kind on ``tasks``.

    Returns the fitted profile (measured values where a probe measured them, ``base``'s elsewhere, see
    :func:`provenance`) and the estimates by parameter name. ``log`` keeps the answers (under
    ``env_id``) and gives back those of an earlier, stopped run; ``progress(answered, total)``."""
    if probes < 1:
        raise ValueError(f"probes must be at least 1, got {probes}")
    if not tasks:
        raise ValueError(f"no tasks to calibrate {domain.name} on")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    rng = np.random.default_rng(seed)  # the plan: task order and draft choices
    probe = _Probe(
        domain,
        executor,
        seed,
        max_steps or domain.max_steps,
        concurrency,
        env_id=env_id or domain.name,
        log=log,
        progress=progress,
    )
    base = base or DomainProfile(draft=domain.draft_params)
    out: dict[str, Estimate] = {}
    contexts = dict(zip((t.task_id for t in tasks), probe.map(probe.gathered, tasks), strict=True))

    # -- the plan ----------------------------------------------------------------------------------
    asks: list[_Ask] = []
    strata = [[t for t in tasks if t.difficulty == d] for d in DIFFICULTIES]
    drafts = [t for stratum in strata if stratum for t in _cycle(stratum, probes, rng)]
    uninformed = [(t, len(asks) + i) for i, t in enumerate(drafts)]
    asks += [_Ask("draft", t, Context()) for t, _ in uninformed]
    informed = [(t, len(asks) + i) for i, t in enumerate(_cycle(tasks, probes * 2, rng))]
    asks += [_Ask("draft", t, contexts[t.task_id]) for t, _ in informed]
    try:
        domain.tool_pool(tasks[0], Context())
        has_tools = True
    except NotImplementedError:
        has_tools = False
    tools = [(t, len(asks) + i) for i, t in enumerate(_cycle(tasks, probes, rng) if has_tools else [])]
    asks += [_Ask("tool", t, Context()) for t, _ in tools]
    revisions: dict[str, list[tuple[Task, str, int]]] = {name: [] for name in REVISION_PROBES.values()}
    second: list[tuple[Task, int]] = []
    for task in _cycle(tasks, probes * 4, rng):
        flawed = probe.known_flawed(task)
        if not flawed:
            continue
        draft = flawed[int(rng.integers(len(flawed)))]
        context = contexts[task.task_id]
        flaw = probe.flaw_of(task, draft)
        structural = probe.structural_feedback(task, context, draft)
        named = (
            structural is not None
            and feedback_kind(structural, artifact_hash(draft), flaw) == "localised"
            and domain.evidence(task, context, flaw.needs) >= 1.0
        )
        feedback = {
            ("p_fix_form" if flaw.cls == "form" else "p_fix[localised]"): structural if named else None,
            "p_fix[verdict]": Feedback("check", artifact_hash(draft), (JUDGE_FAIL,)),
            "p_fix[none]": None,
        }
        for name, fb in feedback.items():
            if (name in LOCALISED and fb is None) or len(revisions[name]) >= probes:
                continue  # feedback that does not name this flaw, or enough probes of this kind
            revisions[name].append((task, draft, len(asks)))
            asks.append(_Ask("revise", task, context, draft, fb))
        if named and flaw.cls == "content" and len(second) < probes:
            second.append((task, len(asks)))
            asks.append(_Ask("revise", task, context, draft, structural, revision=1))
    references, judged_good, judged_bad = [], [], []
    for task in _cycle(tasks, probes, rng):
        pool = domain.pool(task)
        context = contexts[task.task_id]
        references.append((task, len(asks)))
        asks.append(_Ask("revise", task, context, pool.reference))
        judged_good.append(len(asks))
        asks.append(_Ask("judge", task, context, pool.reference))
        flawed = probe.known_flawed(task)
        if flawed:
            judged_bad.append(len(asks))
            asks.append(_Ask("judge", task, context, flawed[int(rng.integers(len(flawed)))]))

    # -- the requests, then the estimates ------------------------------------------------------------
    answers = probe.ask_all(asks)

    def failures(indices: Sequence[int]) -> int:
        return sum(answers[i] is None for i in indices)

    by_difficulty: dict[str, list[tuple[Task, int]]] = defaultdict(list)
    for task, i in uninformed:
        by_difficulty[task.difficulty].append((task, i))
    samples = []
    for d in DIFFICULTIES:
        ys = [probe.correct(t, answers[i]) for t, i in by_difficulty.get(d, [])]
        indices = [i for _, i in by_difficulty.get(d, [])]
        out[f"p_correct[{d}]"] = _rate(ys, failures(indices), len(indices))
        samples.append(np.asarray(ys, dtype=float))
    inf = np.asarray(
        [
            (
                DIFFICULTIES.index(t.difficulty),
                domain.informedness(t, contexts[t.task_id]),
                probe.correct(t, answers[i]),
            )
            for t, i in informed
        ],
        dtype=float,
    ).reshape(-1, 3)

    def gain(u_easy: np.ndarray, u_std: np.ndarray, u_hard: np.ndarray, inf: np.ndarray) -> float:
        p = np.array([s.mean() if len(s) else np.nan for s in (u_easy, u_std, u_hard)])
        p = np.where(np.isnan(p), [base.draft.p_correct[d] for d in DIFFICULTIES], p)
        levels = inf[:, 1]
        resid = inf[:, 2] - p[inf[:, 0].astype(int)]
        denom = float((levels**2).sum())
        return float((levels * resid).sum() / denom) if denom > 0 else float("nan")

    informed_failed = failures([i for _, i in informed])
    out["informed_gain"] = replace(
        bootstrap(gain, [*samples, inf], rng), failed=informed_failed, attempts=len(informed)
    )
    if has_tools:
        hits = [answers[i] == domain.tool_pool(t, Context()).reference for t, i in tools]
        out["p_tool_correct"] = _rate(hits, failures([i for _, i in tools]), len(tools))

    fixed: dict[str, list[bool]] = {}
    unfixed_changed, unfixed_failed = [], 0
    for name in REVISION_PROBES.values():
        ys = []
        for task, draft, i in revisions[name]:
            ok = probe.correct(task, answers[i])
            ys.append(ok)
            if not ok:  # a reply without an artifact leaves the draft as it was: not a new flaw
                unfixed_changed.append(answers[i] is not None and answers[i] != draft)
                unfixed_failed += answers[i] is None
        fixed[name] = ys
        indices = [i for _, _, i in revisions[name]]
        out[name] = _rate(ys, failures(indices), len(indices))
    again = [probe.correct(t, answers[i]) for t, i in second]
    out["fix_decay"] = replace(
        bootstrap(
            lambda a, b: float(b.mean() / a.mean()) if len(a) and len(b) and a.mean() > 0 else float("nan"),
            [np.asarray(fixed["p_fix[localised]"], dtype=float), np.asarray(again, dtype=float)],
            rng,
        ),
        failed=failures([i for _, i in second]),
        attempts=len(second),
    )
    out["p_reflaw"] = _rate(unfixed_changed, unfixed_failed, len(unfixed_changed))
    # a REVISE of the reference without an artifact leaves the reference in place: not broken
    broken = [answers[i] is not None and not probe.correct(t, answers[i]) for t, i in references]
    out["p_break"] = _rate(broken, failures([i for _, i in references]), len(references))
    # a judge reply without a verdict is no verdict: left out of the rates
    good = [_alarm(answers[i]) for i in judged_good if answers[i] is not None]
    bad = [_alarm(answers[i]) for i in judged_bad if answers[i] is not None]
    out["judge_fpr"] = _rate(good, failures(judged_good), len(judged_good))
    out["judge_tpr"] = _rate(bad, failures(judged_bad), len(judged_bad))
    return fit(base, out), out


def _measured(estimates: dict[str, Estimate], name: str) -> float | None:
    """The estimate's value to fit, or None when it measured nothing."""
    found = estimates.get(name)
    if found is None or found.n == 0 or not np.isfinite(found.value) or unanswered(found):
        return None
    return float(found.value) if name in UNBOUNDED else float(min(1.0, max(0.0, found.value)))


def unanswered(estimate: Estimate) -> bool:
    """Every probe request of the estimate went without an answer in form: it measured nothing."""
    sent = estimate.n if estimate.attempts is None else estimate.attempts
    return sent > 0 and estimate.failed >= sent


UNMEASURED = "unmeasured"
"""How :func:`provenance` marks a parameter whose probes all went unanswered."""


def _fields(params: Any) -> list[tuple[str, Any]]:
    """``(field name, value)`` of a ``DraftParams`` or ``Mechanism``, in declaration order."""
    return [(f.name, getattr(params, f.name)) for f in fields(params)]


def fit(base: DomainProfile, estimates: dict[str, Estimate]) -> DomainProfile:
    """``base`` with every parameter a probe measured replaced by its estimate: a float field ``name``
    by estimate ``name``, a mapping field's key ``k`` by estimate ``name[k]``; everything else kept."""

    def refit(params: Any) -> Any:
        changes = {}
        for name, value in _fields(params):
            if isinstance(value, Mapping):
                changes[name] = {
                    k: v if (m := _measured(estimates, f"{name}[{k}]")) is None else m
                    for k, v in value.items()
                }
            elif isinstance(value, float):
                measured = _measured(estimates, name)
                changes[name] = value if measured is None else measured
        return replace(params, **changes)

    return replace(base, draft=refit(base.draft), mechanism=refit(base.mechanism))


def provenance(base: DomainProfile, estimates: dict[str, Estimate], base_name: str) -> dict[str, str]:
    """Per parameter of the profile (mapping fields per key, an empty mapping as a whole):
    ``"measured"``, ``"unmeasured: all N probes went unanswered (value from <base_name>)"`` or
    ``"not measured (from <base_name>)"``."""
    out = {}
    for params in (base.draft, base.mechanism):
        for name, value in _fields(params):
            names = [f"{name}[{k}]" for k in value] if isinstance(value, Mapping) and value else [name]
            for key in names:
                found = estimates.get(key)
                if _measured(estimates, key) is not None:
                    out[key] = "measured"
                elif found is not None and unanswered(found):
                    sent = found.n if found.attempts is None else found.attempts
                    out[key] = f"{UNMEASURED}: all {sent} probes went unanswered (value from {base_name})"
                else:
                    out[key] = f"not measured (from {base_name})"
    return out


def _alarm(text: str | None) -> bool:
    """A judge verdict reports a problem unless it starts with PASS (``Episode.judge``'s reading)."""
    return text is not None and not text.strip().upper().startswith("PASS")


def truth_of(profile: DomainProfile) -> dict[str, float]:
    """A profile's parameters under the estimate names (to compare a recovery with the truth)."""
    d, m = profile.draft, profile.mechanism
    return {
        **{f"p_correct[{k}]": d.p_correct[k] for k in DIFFICULTIES},
        "informed_gain": d.informed_gain,
        "p_tool_correct": d.p_tool_correct,
        **{f"p_fix[{k}]": m.p_fix[k] for k in FEEDBACK_KINDS},
        "p_fix_form": m.p_fix_form,
        "fix_decay": m.fix_decay,
        "p_reflaw": m.p_reflaw,
        "p_break": m.p_break,
        "judge_tpr": m.judge_tpr,
        "judge_fpr": m.judge_fpr,
    }


def _fmt(value: float) -> str:
    return f"{value:6.3f}" if np.isfinite(value) else "   nan"


def table(
    env_id: str,
    estimates: dict[str, Estimate],
    sources: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> str:
    """The estimates as a fixed-width table: estimate, interval, probes and the share of probe replies
    without an answer in form; with ``sources`` also every parameter no probe measured, marked so
    (``values``: what the profile holds for them)."""
    rows = [
        f"{env_id}",
        f"  {'parameter':<20} {'estimate':>8}  {'95% interval':<17} {'probes':>6}  {'no answer':>9}",
    ]
    for name, e in estimates.items():
        mark = ""
        if sources is not None and sources.get(name, "measured") != "measured":
            mark = f"  {sources[name]}"
            if values is not None and name in values:
                mark += f" = {values[name]}"
        shown = (
            f"{_fmt(e.value):>8}  [{_fmt(e.low)}, {_fmt(e.high)}]"
            if e.n
            else f"{'-':>8}  {'no estimate':<17}"
        )
        rows.append(f"  {name:<20} {shown}  {e.n:>6}  {e.failure_rate:>9.1%}{mark}")
    for name, source in (sources or {}).items():
        if name not in estimates and source != "measured":
            shown = f" = {values[name]}" if values is not None and name in values else ""
            rows.append(f"  {name:<20} {source}{shown}")
    return "\n".join(rows)


def profile_values(profile: DomainProfile) -> dict[str, Any]:
    """A profile's parameters under the names ``provenance`` uses."""
    out: dict[str, Any] = {}
    for params in (profile.draft, profile.mechanism):
        for name, value in _fields(params):
            if isinstance(value, Mapping) and value:
                out.update({f"{name}[{k}]": v for k, v in value.items()})
            else:
                out[name] = dict(value) if isinstance(value, Mapping) else value
    return out


def holdout_split(tasks: Sequence[Task], fraction: float, seed: int = 0) -> tuple[list[str], list[str]]:
    """``(probe task ids, held-out task ids)``: ``fraction`` of each difficulty's tasks held out (at
    least one task stays on each side), chosen by ``seed``."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"the held-out fraction must lie in [0, 1), got {fraction}")
    rng = np.random.default_rng([seed, 97])
    held: list[str] = []
    for d in DIFFICULTIES:
        ids = sorted(t.task_id for t in tasks if t.difficulty == d)
        rng.shuffle(ids)
        k = min(len(ids) - 1, round(fraction * len(ids))) if fraction > 0 else 0
        held += ids[: max(0, k)]
    return [t.task_id for t in tasks if t.task_id not in held], [
        t.task_id for t in tasks if t.task_id in held
    ]


def _probing(executor: Any) -> Any:
    """A chat LLM's settings without the early failure check: a probe kind the model never answers in
    form is a measurement here (its parameter is marked unmeasured), not a reason to stop."""
    from harness_gym.executors.openai_executor import OpenAIConfig

    return replace(executor, fail_on_error_rate=False) if isinstance(executor, OpenAIConfig) else executor


def calibrate_env(
    env_id: str,
    executor: Any = "simulated",
    executor_profile: Any = None,
    probes: int = 200,
    seed: int = 0,
    task_ids: Sequence[str] | None = None,
    concurrency: int = 1,
    log: ProbeLog | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[DomainProfile, dict[str, Estimate]]:
    """Calibrate one environment's domain on its train split (or ``task_ids`` of it) with the executor
    ``gym.make`` would bind (``log``, ``progress``: :func:`calibrate_domain`)."""
    import gymnasium as gym

    env = gym.make(
        env_id,
        split="train",
        executor=_probing(executor),
        executor_profile=executor_profile,
        task_ids=task_ids,
    )
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
            concurrency=concurrency,
            log=log,
            progress=progress,
            env_id=env_id,
        )
    finally:
        env.close()


def _task_means(results: Sequence[Any]) -> dict[str, float]:
    """Each task's mean G over its distinct episodes: episodes of one task that repeat each other call
    for call (equal ``trace``) are one draw, not several."""
    draws: dict[str, dict[Any, float]] = defaultdict(dict)
    for i, r in enumerate(results):
        draws[r.task_id][r.trace if r.trace is not None else ("episode", i)] = r.G
    return {task: float(np.mean(list(gs.values()))) for task, gs in draws.items()}


def _task_interval(means: Sequence[float], rng: np.random.Generator) -> Estimate:
    """Mean over tasks with the percentile-bootstrap interval that resamples tasks."""
    return bootstrap(lambda g: float(g.mean()), [np.asarray(means, dtype=float)], rng)


def validate_env(
    env_id: str,
    fitted: DomainProfile,
    task_ids: Sequence[str],
    executor: Any = "simulated",
    executor_profile: Any = None,
    seeds: Sequence[int] = (0, 1, 2),
    predicted_rollouts: int = 5,
    concurrency: int = 1,
    checkpoint: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """The Base harness on held-out train tasks, through ``executor`` (measured G) and through the
    simulator with the fitted profile (predicted G, ``predicted_rollouts`` per task and seed).

    The unit is the task: its mean G over distinct episodes (copies are one draw), so the intervals
    resample tasks; the verdict is whether the 95% interval of the paired per-task difference (measured
    minus predicted) holds 0. ``checkpoint`` keeps the measured episodes (an evaluation checkpoint), so
    a stopped validation resumes."""
    from harness_gym.envs.registry import env_class
    from harness_gym.evaluation.engine import EngineConfig
    from harness_gym.evaluation.protocol import evaluate
    from harness_gym.policies.scripted import BasePolicy

    domain = env_class(env_id).domain_cls.name
    engine = EngineConfig(concurrency=concurrency)
    common = {"split": "train", "seeds": tuple(seeds), "engine": engine, "task_ids": list(task_ids)}
    measured = evaluate(
        BasePolicy(env_id),
        env_id,
        rollouts=1,
        executor=executor,
        executor_profile=executor_profile,
        checkpoint=checkpoint,
        **common,
    )
    profile = ExecutorProfile(name="fitted", domains={domain: fitted})
    predicted = evaluate(
        BasePolicy(env_id), env_id, rollouts=predicted_rollouts, executor_profile=profile, **common
    )
    rng = np.random.default_rng([0, 11])
    by_task = _task_means(measured)
    expected = _task_means(predicted)
    tasks = sorted(by_task)
    difference = _task_interval([by_task[t] - expected[t] for t in tasks], rng)
    draws = len({(r.task_id, r.trace if r.trace is not None else i) for i, r in enumerate(measured)})
    return {
        "tasks": len(task_ids),
        "measured": _task_interval([by_task[t] for t in tasks], rng),
        "measured_episodes": len(measured),
        "measured_draws": draws,
        "predicted": _task_interval([expected[t] for t in tasks], rng),
        "predicted_episodes": len(predicted),
        "difference": difference,
        "consistent": bool(difference.covers(0.0)),
    }


def validation_line(check: Mapping[str, Any]) -> str:
    m, p, d = check["measured"], check["predicted"], check["difference"]
    verdict = "consistent" if check["consistent"] else "not consistent"
    return (
        f"  validation, Base G on {check['tasks']} held-out train tasks: measured {m.value:.3f} "
        f"[{m.low:.3f}, {m.high:.3f}] ({check['measured_episodes']} episodes, {check['measured_draws']} "
        f"distinct), predicted by the fitted profile {p.value:.3f} [{p.low:.3f}, {p.high:.3f}] "
        f"({check['predicted_episodes']} simulated episodes); difference {d.value:+.3f} "
        f"[{d.low:+.3f}, {d.high:+.3f}] resampling tasks: {verdict} at 95%"
    )


def calibrate_profile(
    env_ids: Sequence[str],
    executor: Any = "simulated",
    executor_profile: Any = None,
    probes: int = 200,
    seed: int = 0,
    name: str = "calibrated",
    log: Callable[[str], None] = print,
    concurrency: int = 1,
    holdout: float = 0.25,
    validation_seeds: Sequence[int] = (0, 1, 2),
    checkpoint: ProbeLog | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[ExecutorProfile, dict[str, dict[str, Any]]]:
    """Calibrate several environments into one profile, printing each one's table through ``log``.

    ``holdout`` of each environment's train tasks are kept out of the probes and play the validation
    (:func:`validate_env`; 0 skips it). Returns the profile and, per environment, its report:
    ``estimates`` and ``parameters`` (value, interval, probes, share without an answer, ``source``:
    measured or not) and ``validation``; JSON-ready (:func:`report_json`). ``checkpoint`` keeps every
    answer (and, beside it, the validation's measured episodes) so a stopped calibration resumes;
    ``progress(env_id, answered, total)`` follows the probes."""
    import gymnasium as gym

    from harness_gym.envs.registry import env_class

    domains, reports = {}, {}
    for env_id in env_ids:
        env = gym.make(env_id, split="train", executor_profile=executor_profile)
        base = env.unwrapped.executor_profile
        base_name = (
            str(executor_profile or os.environ.get(PROFILE_ENV) or "default")
            if not isinstance(executor_profile, ExecutorProfile)
            else executor_profile.name
        )
        probe_ids, held = holdout_split(env.unwrapped.tasks, holdout, seed)
        env.close()
        profile, estimates = calibrate_env(
            env_id,
            executor,
            executor_profile,
            probes=probes,
            seed=seed,
            task_ids=probe_ids,
            concurrency=concurrency,
            log=checkpoint,
            progress=None if progress is None else (lambda done, total, e=env_id: progress(e, done, total)),
        )
        sources = provenance(base, estimates, base_name)
        values = profile_values(profile)
        log(table(env_id, estimates, sources, values))
        report: dict[str, Any] = {"estimates": estimates, "sources": sources, "values": values}
        if held:
            where = None
            if checkpoint is not None:
                where = checkpoint.path.with_name(f"{checkpoint.path.name}.validation-{env_id}")
            check = validate_env(
                env_id,
                profile,
                held,
                executor,
                executor_profile,
                validation_seeds,
                concurrency=concurrency,
                checkpoint=where,
            )
            log(validation_line(check))
            report["validation"] = check
        domains[env_class(env_id).domain_cls.name] = profile
        reports[env_id] = report
    executor_name = getattr(executor, "model", None) or str(executor)
    notes = f"harness-gym calibrate: {probes} probes per kind, seed {seed}, executor {executor_name}"
    return ExecutorProfile(name=name, domains=domains, notes=notes), reports


def _estimate_json(e: Estimate) -> dict[str, Any]:
    def finite(v: float) -> float | None:
        return float(v) if e.n and np.isfinite(v) else None  # no probe, no estimate and no interval

    return {
        "value": finite(e.value),
        "low": finite(e.low),
        "high": finite(e.high),
        "probes": e.n,
        "no_answer": e.failed,
        "no_answer_rate": float(e.failure_rate) if np.isfinite(e.failure_rate) else None,
    }


def report_json(reports: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``calibrate_profile``'s reports as JSON: per environment, per parameter its ``source`` (measured
    or ``not measured (from PROFILE)``), the value the profile holds and, where probed, the estimate."""
    out: dict[str, Any] = {}
    for env_id, report in reports.items():
        estimates, sources, values = report["estimates"], report["sources"], report["values"]
        parameters = {}
        for name in dict.fromkeys([*sources, *estimates]):
            entry: dict[str, Any] = {
                "source": sources.get(name, "measured"),
                "profile_value": values.get(name),
            }
            if name in estimates:
                entry.update(_estimate_json(estimates[name]))
            parameters[name] = entry
        out[env_id] = {"parameters": parameters}
        if "validation" in report:
            check = report["validation"]
            out[env_id]["validation"] = {
                "held_out_tasks": check["tasks"],
                "measured_base_G": _estimate_json(check["measured"]),
                "measured_episodes": check["measured_episodes"],
                "predicted_base_G": _estimate_json(check["predicted"]),
                "predicted_episodes": check["predicted_episodes"],
                "measured_distinct_episodes": check["measured_draws"],
                "difference": _estimate_json(check["difference"]),
                "verdict": "consistent" if check["consistent"] else "not consistent",
                "unit": "task (copies of an episode are one draw)",
            }
    return out
