"""Check findings carry their component, and every domain declares its flaw kinds in one place."""

from __future__ import annotations

import ast
import importlib
import pickle
from pathlib import Path

import gymnasium as gym
import pytest

from harness_gym import ALL_ENV_IDS
from harness_gym.core.actions import Action
from harness_gym.envs.domain import artifact_hash
from harness_gym.envs.registry import env_class
from harness_gym.executors import Feedback, Finding
from harness_gym.executors.base import JUDGE
from harness_gym.executors.profiles import feedback_kind


def _gathered(env, task_id: str, seed: int = 0):
    """An episode after OBSERVE and every RETRIEVE / CALL_TOOL the mask allows, leaving room to check."""
    _, info = env.reset(seed=seed, options={"task_id": task_id})
    mask = info["action_mask"]
    for action in [Action.OBSERVE] + [Action.RETRIEVE] * 6 + [Action.CALL_TOOL] * 4:
        if env.unwrapped._ep.state.t >= env.unwrapped.max_steps - 2:
            break
        if mask[action]:
            _, _, _, _, info = env.step(int(action))
            mask = info["action_mask"]
    return env.unwrapped._ep


def _check(env, ep, text: str):
    ep.draft, ep.draft_hash = text, artifact_hash(text)
    ep.state.has_draft = True
    return env.unwrapped.domain.check(ep)


def test_a_finding_is_its_text_and_keeps_its_component():
    finding = Finding("unit", "unit: the answer must be in EUR")
    assert finding == "unit: the answer must be in EUR" and finding.component == "unit"
    again = pickle.loads(pickle.dumps(finding))
    assert again == finding and again.component == "unit"
    feedback = Feedback("check", "h", (finding, "an untagged issue"))
    assert feedback.components == {"unit"}


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
def test_every_flaw_kind_of_the_pools_is_declared(env_id):
    domain = gym.make(env_id, split="all").unwrapped.domain
    kinds = {item.flaw for task in domain.tasks() for item in domain.pool(task).flawed}
    assert kinds <= set(domain.flaws), sorted(kinds - set(domain.flaws))


def _emitted(domain_cls) -> set[str]:
    """The components a domain's code can tag a finding with: the literal first argument of every
    ``Finding(...)`` in the modules of its package and of the packages it inherits from."""
    found: set[str] = set()
    modules = {
        cls.__module__ for cls in domain_cls.__mro__ if cls.__module__.startswith("harness_gym.domains.")
    }
    for module in modules:  # each domain class lives in its package's __init__.py
        root = Path(importlib.import_module(module).__file__).parent
        for path in root.glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) == "Finding"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    found.add(node.args[0].value)
    return found


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
def test_the_mapping_names_components_the_checks_emit(env_id):
    """A misspelt component in ``Domain.flaws`` would never match a finding."""
    domain_cls = env_class(env_id).domain_cls
    named = set().union(*(flaw.named_by for flaw in domain_cls.flaws.values()))
    assert JUDGE not in named  # a judge's verdict names no part of the artifact
    assert named <= _emitted(domain_cls), sorted(named - _emitted(domain_cls))


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
def test_every_issue_a_check_reports_is_a_tagged_finding(env_id):
    """Every pool draft of the first eval tasks, checked with nothing and with everything gathered."""
    env = gym.make(env_id, split="eval")
    domain = env.unwrapped.domain
    for task in env.unwrapped.tasks[:6]:
        pool = domain.pool(task)
        for text in [pool.reference, *(item.source for item in pool.flawed)]:
            for gather in (False, True):
                if gather:
                    ep = _gathered(env, task.task_id)
                else:
                    env.reset(seed=0, options={"task_id": task.task_id})
                    ep = env.unwrapped._ep
                outcome = _check(env, ep, text)
                untagged = [issue for issue in outcome.issues if not isinstance(issue, Finding)]
                assert not untagged, untagged


def test_feedback_kind_reads_the_flaws_own_components():
    env = gym.make("HarnessPlanning-v0", split="eval")
    flaws = env.unwrapped.domain.flaws
    h = artifact_hash("plan")
    goal = Feedback("check", h, (Finding("goal_unmet", "goal: on(a, b) not met"),))
    assert feedback_kind(goal, h, flaws["wrong_goal"]) == "localised"
    assert feedback_kind(goal, h, flaws["constraint_violation"]) == "verdict"
    assert feedback_kind(goal, artifact_hash("another plan"), flaws["wrong_goal"]) == "none"
    judged = Feedback("check", h, (Finding(JUDGE, "judge: FAIL: no"),))
    assert feedback_kind(judged, h, flaws["wrong_goal"]) == "verdict"


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
def test_every_declared_evidence_need_is_measured(env_id):
    env = gym.make(env_id, split="eval")
    domain = env.unwrapped.domain
    ep = _gathered(env, env.unwrapped.tasks[0].task_id)
    for kind, flaw in domain.flaws.items():
        assert 0.0 <= domain.evidence(ep.task, ep.context, flaw.needs) <= 1.0, kind


def _contexts(env, task_id: str):
    """The episode with nothing gathered, after Base's gathering, and with everything gathered."""
    env.reset(seed=0, options={"task_id": task_id})
    yield env.unwrapped._ep
    env.reset(seed=0, options={"task_id": task_id})
    for action, _ in env.unwrapped.domain.base_script[:-2]:
        if env.unwrapped._mask[action]:
            env.step(int(action))
    yield env.unwrapped._ep
    yield _gathered(env, task_id)


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
def test_a_check_fails_a_reference_draft_only_for_what_the_rubric_scores(env_id):
    """Every structural component that fails on a reference draft costs that draft a rubric criterion
    (the grounding components the ``grounding`` criterion itself)."""
    env = gym.make(env_id, split="eval")
    domain = env.unwrapped.domain
    package = importlib.import_module(type(domain).__module__)
    scored_grounding = getattr(package, "GROUNDING", frozenset())
    for task in env.unwrapped.tasks[:10]:
        reference = domain.pool(task).reference
        for ep in _contexts(env, task.task_id):
            outcome = _check(env, ep, reference)
            failing = {issue.component for issue in outcome.issues if issue.component != JUDGE}
            if not failing:
                continue
            rubric = domain.verdict(ep, reference).rubric
            lost = {name for name, (score, top) in rubric.items() if score < top}
            assert lost, (task.task_id, sorted(failing))
            if failing & scored_grounding:
                assert "grounding" in lost, (task.task_id, sorted(failing))
