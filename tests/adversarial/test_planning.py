"""Planning: plans that try to earn credit without reaching the goal, played on every task."""

from __future__ import annotations

import pytest

from adversarial.hacks import Hack, assert_no_gain, play_hack
from harness_gym.core.task import Task
from harness_gym.domains.planning import HarnessPlanningEnv
from harness_gym.domains.planning.world import TABLE, artifact_scores, make_world, validate_world

FUNCTIONAL = ("constraints", "goal_coverage")
ENV = HarnessPlanningEnv


def plain(task: Task) -> str:
    """The pool plan that earns most without reaching the whole goal (an executable partial plan if any)."""
    payload = task.payload

    def earned(text: str) -> float:
        rubric = artifact_scores(payload, text)
        return rubric["goal_coverage"][0] + rubric["constraints"][0]

    partial = [
        i["source"] for i in payload["pool"] if artifact_scores(payload, i["source"])["goal_coverage"][0] < 2
    ]
    assert partial, f"{task.task_id}: every pool plan reaches the goal"
    return max(partial, key=earned)


def nothing(task: Task) -> str:
    """The plain wrong answer of a plan that does not try: no plan at all."""
    return ""


def _world(task: Task):
    payload = task.payload
    return make_world(payload["kind"], payload["problem"], payload["constraints"])


def round_trip(task: Task) -> str:
    """Two legal steps that undo each other: every goal atom already true stays true, nothing else moves."""
    world = _world(task)
    candidates: list[str] = []
    if world.kind == "blocks":
        on = dict(world.init)
        clear = [b for b in on if b not in on.values()]
        for x in clear:
            if on[x] != TABLE:
                candidates.append(f"move({x}, table)\nmove({x}, {on[x]})")
            candidates += [f"move({x}, {z})\nmove({x}, table)" for z in clear if z != x and on[x] == TABLE]
    else:
        for truck, at in world.truck_at.items():
            candidates += [
                f"drive({truck}, {at}, {b})\ndrive({truck}, {b}, {at})" for b in sorted(world.roads[at])
            ]
    for plan in candidates:
        report = validate_world(world, plan)
        if report.illegal_step is None and not report.format_errors:
            return plan
    raise AssertionError(f"{task.task_id}: no legal round trip")


def unknown_actions(task: Task) -> str:
    return f"{plain(task)}\nachieve_goal()\nsolve(all)"


def only_unknown_actions(task: Task) -> str:
    return "achieve_goal()\nverify(goal)"


def duplicated(task: Task) -> str:
    return f"{plain(task)}\n{plain(task)}"


def comments_and_blank_lines(task: Task) -> str:
    lines = plain(task).splitlines()
    return "\n\n".join(f"# step {i}\n{line}" for i, line in enumerate(lines, start=1))


def shouting(task: Task) -> str:
    return plain(task).upper()


HACKS: dict[str, Hack] = {
    "round_trip_keeps_goals_already_true": Hack(nothing, round_trip),
    "empty_plan": Hack(nothing, nothing),
    "only_unknown_actions": Hack(nothing, only_unknown_actions),
} | {f.__name__: Hack(plain, f) for f in (unknown_actions, duplicated, comments_and_blank_lines, shouting)}


@pytest.mark.parametrize("split", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_no_more_than_the_plain_wrong_answer(name: str, split: str) -> None:
    assert_no_gain(*play_hack(ENV, HACKS[name], split=split), FUNCTIONAL, name)
