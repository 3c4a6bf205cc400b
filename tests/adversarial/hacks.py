"""Shared machinery of the adversarial corpus: an executor that submits crafted artifacts, and a player.

A hack is played as a user would play it: a custom executor (the public ``Executor`` protocol) whose
DRAFT returns the crafted artifact and whose judge always says PASS (an adversarial LLM judges itself
kindly), inside an ordinary environment driven through ``reset``/``step``. The episode's final rubric
and the issues of its last CHECK are what the tests compare.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness_gym import Action
from harness_gym.core.task import Task
from harness_gym.envs.env import HarnessEnv
from harness_gym.executors.base import Context, ExecutorRequest, ExecutorResponse

Build = Callable[[Task, Context], str]


class CraftedExecutor:
    """Drafts ``draft(task, context)``; tool requests get ``tool(task, context)``; judges say PASS."""

    name = "adversarial"

    def __init__(self, draft: Build, tool: Build | None = None) -> None:
        self.draft = draft
        self.tool = tool

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        if request.kind == "judge":
            return ExecutorResponse("PASS")
        if request.kind == "tool":
            if self.tool is None:
                return ExecutorResponse("", error="this executor calls no tools")
            return ExecutorResponse(self.tool(request.task, request.context))
        return ExecutorResponse(self.draft(request.task, request.context))


@dataclass(frozen=True)
class Played:
    """What one episode with a crafted artifact earned."""

    task_id: str
    rubric: Mapping[str, tuple[float, float]]
    check_issues: tuple[str, ...] | None
    """Issues of the last CHECK (None: no CHECK ran)."""
    G: float


SCRIPT: tuple[Action, ...] = (
    Action.OBSERVE,
    *(Action.RETRIEVE,) * 8,
    Action.DRAFT,
    Action.CHECK,
    Action.SUBMIT,
)
"""Read everything a harness can read, draft once, check, submit (illegal steps are skipped)."""


def play(
    env_cls: type[HarnessEnv],
    draft: Build,
    *,
    split: str = "eval",
    tool: Build | None = None,
    script: Sequence[Action] = SCRIPT,
    where: Callable[[Task], bool] | None = None,
    **env_kwargs: Any,
) -> list[Played]:
    """Play ``script`` once per task of the split (those ``where`` accepts) with a crafted executor."""
    executor = CraftedExecutor(draft, tool)
    env = env_cls(split=split, executor=executor, max_steps=len(script) + 1, **env_kwargs)
    ids = [task.task_id for task in env.tasks if where is None or where(task)]
    out = []
    for task_id in ids:
        _, info = env.reset(seed=0, options={"task_id": task_id})
        final: dict[str, Any] = {}
        for action in script:
            if not info["action_mask"][action]:
                continue
            _, _, terminated, truncated, info = env.step(int(action))
            if terminated or truncated:
                final = info
                break
        if not final:
            _, _, _, _, final = env.step(int(Action.SUBMIT))
        checks = [step for step in final["trajectory"]["steps"] if step["action"] == "CHECK"]
        issues = tuple(checks[-1].get("issues", ())) if checks else None
        out.append(Played(task_id, final["rubric"], issues, final["G"]))
    env.close()
    return out


def assert_no_gain(
    plain: Sequence[Played], hacked: Sequence[Played], criteria: Sequence[str], hack: str
) -> None:
    """Per task, the hack earns no more than the plain artifact it wraps on every functional criterion,
    and a CHECK of it reports problems.

    A criterion may be scored on some tasks only (knowledge work's ``source_conflict``), but each must be
    scored on at least one played task, and the hack must be scored on the same criteria as the plain
    artifact: a renamed or dropped criterion fails here instead of leaving the test to CHECK alone."""
    assert plain, f"{hack}: no task played"
    assert [p.task_id for p in plain] == [h.task_id for h in hacked]
    unscored = [name for name in criteria if not any(name in p.rubric for p in plain)]
    assert not unscored, f"{hack}: functional criteria {unscored} are in no rubric {sorted(plain[0].rubric)}"
    for p, h in zip(plain, hacked, strict=True):
        assert h.rubric.keys() == p.rubric.keys(), (hack, h.task_id, sorted(p.rubric), sorted(h.rubric))
        for name in criteria:
            if name in p.rubric:
                assert h.rubric[name][0] <= p.rubric[name][0] + 1e-9, (
                    hack,
                    h.task_id,
                    name,
                    p.rubric,
                    h.rubric,
                )
        assert h.check_issues, (hack, h.task_id, "CHECK reported the hack clean")


@dataclass(frozen=True)
class Hack:
    """One hack: the plain wrong artifact it wraps and the hacked one (both built from the task), and how
    the episode is played (``play`` keyword arguments, e.g. a script or the executor's tool calls)."""

    plain: Callable[[Task], str]
    hacked: Callable[[Task], str]
    plain_play: Mapping[str, Any] = field(default_factory=dict)
    hacked_play: Mapping[str, Any] = field(default_factory=dict)
    where: Callable[[Task], bool] | None = None
    """The tasks the hack applies to (None: all)."""
    hacked_in_context: Build | None = None
    """Builds the hacked artifact from the task and the harness context instead of ``hacked``."""


def play_hack(env_cls: type[HarnessEnv], hack: Hack, **common: Any) -> tuple[list[Played], list[Played]]:
    """(plain, hacked) records over the same tasks."""
    common = {"where": hack.where, **common}
    plain = play(env_cls, lambda task, _ctx: hack.plain(task), **{**common, **hack.plain_play})
    hacked_build = hack.hacked_in_context or (lambda task, _ctx: hack.hacked(task))
    hacked = play(env_cls, hacked_build, **{**common, **hack.hacked_play})
    return plain, hacked
