"""Task records: validation with clear errors, the stratified split, the shipped files."""

from __future__ import annotations

import json

import pytest

import harness_gym
from harness_gym.core.rubric import g_norm, missing_fraction
from harness_gym.core.task import TaskFileError, read_jsonl, select, stratified_split, validation_ids
from harness_gym.envs.registry import ADAPTERS, env_class

GOOD = {
    "task_id": "x-1",
    "domain": "coding",
    "version": "v0",
    "difficulty": "easy",
    "split": "train",
    "template": "t",
    "prompt": "p",
    "payload": {},
}


def write(tmp_path, *lines: str):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"difficulty": "medium"}, "difficulty 'medium'"),
        ({"split": "test"}, "split 'test'"),
        ({"payload": []}, "field 'payload' must be dict"),
        ({"task_id": ""}, "empty task_id"),
        ({"colour": "red"}, "unknown field"),
    ],
)
def test_bad_records_name_file_line_and_field(tmp_path, change, message):
    path = write(tmp_path, json.dumps(GOOD), json.dumps({**GOOD, "task_id": "x-2", **change}))
    with pytest.raises(TaskFileError, match=message) as err:
        read_jsonl(path)
    assert f"{path}:2" in str(err.value)


def test_missing_field_invalid_json_duplicates_and_empty_files(tmp_path):
    record = dict(GOOD)
    del record["prompt"]
    with pytest.raises(TaskFileError, match="missing field"):
        read_jsonl(write(tmp_path, json.dumps(record)))
    with pytest.raises(TaskFileError, match=r":1: invalid JSON"):
        read_jsonl(write(tmp_path, "{not json"))
    with pytest.raises(TaskFileError, match="duplicate task_id 'x-1'"):
        read_jsonl(write(tmp_path, json.dumps(GOOD), json.dumps(GOOD)))
    with pytest.raises(TaskFileError, match="no tasks"):
        read_jsonl(write(tmp_path, ""))


def test_stratified_split_is_exact_keeps_templates_whole_and_is_seeded():
    items = [
        (f"{diff}-{i}", diff, f"{diff}-{i // 2}")
        for diff, n in (("easy", 20), ("standard", 60), ("hard", 20))
        for i in range(n)
    ]
    split = stratified_split(items, seed=3)
    assert split == stratified_split(items, seed=3)
    assert split != stratified_split(items, seed=4)
    for diff, expected in (("easy", 4), ("standard", 12), ("hard", 4)):
        assert sum(split[t] == "eval" for t, d, _ in items if d == diff) == expected
    by_template: dict[str, set[str]] = {}
    for task_id, _, template in items:
        by_template.setdefault(template, set()).add(split[task_id])
    assert all(len(splits) == 1 for splits in by_template.values())


def test_stratified_split_refuses_impossible_group_sizes():
    items = [(f"t{i}", "easy", f"g{i // 5}") for i in range(10)]  # two groups of 5; 20% = 2
    with pytest.raises(ValueError, match="cannot place exactly 2 easy"):
        stratified_split(items)


CONTROLLED = [env_id for env_id in harness_gym.ENV_IDS if env_id not in ADAPTERS]


@pytest.mark.parametrize("env_id", CONTROLLED)
def test_shipped_task_sets_follow_the_protocol(env_id):
    domain = env_class(env_id).domain_cls()
    tasks = domain.tasks()
    counts = {}
    for task in tasks:
        counts[(task.split, task.difficulty)] = counts.get((task.split, task.difficulty), 0) + 1
    assert counts == {
        ("train", "easy"): 16,
        ("train", "standard"): 48,
        ("train", "hard"): 16,
        ("eval", "easy"): 4,
        ("eval", "standard"): 12,
        ("eval", "hard"): 4,
    }
    train = {t.template for t in tasks if t.split == "train"}
    assert train.isdisjoint(t.template for t in tasks if t.split == "eval")
    assert all(t.domain == domain.name and t.version == "v0" for t in tasks)


@pytest.mark.parametrize("env_id", [CONTROLLED[0], "HarnessTauRetail-v0"])
def test_validation_is_a_fixed_stratified_fifth_of_the_train_tasks(env_id):
    tasks = env_class(env_id).domain_cls().tasks()
    chosen = validation_ids(tasks)
    assert chosen == validation_ids(list(reversed(tasks)))  # the order of the records does not matter
    train = [t for t in tasks if t.split == "train"]
    assert chosen < {t.task_id for t in train} and len(chosen) == round(0.2 * len(train))
    for difficulty in ("easy", "standard", "hard"):
        n = sum(t.difficulty == difficulty for t in train)
        assert sum(t.difficulty == difficulty for t in train if t.task_id in chosen) == round(0.2 * n)
    assert [t.task_id for t in select(tasks, "validation")] == [
        t.task_id for t in train if t.task_id in chosen
    ]
    assert validation_ids(tasks, seed=1) != chosen
    with pytest.raises(ValueError, match="unknown split 'test'"):
        select(tasks, "test")


def test_rubric_normalisation():
    assert g_norm({"a": (1.0, 3.0), "b": (1.0, 1.0)}) == pytest.approx(0.5)
    assert missing_fraction({"a": (1.0, 3.0), "b": (1.0, 1.0)}) == 0.5
    with pytest.raises(ValueError, match="criterion 'a'"):
        g_norm({"a": (2.0, 1.0)})
    with pytest.raises(ValueError, match="at least one"):
        g_norm({})


@pytest.mark.parametrize("env_id", sorted(ADAPTERS & set(harness_gym.ENV_IDS)))
def test_adapters_default_to_16_train_and_20_eval_tasks(env_id):
    tasks = env_class(env_id).domain_cls().tasks()
    assert sum(t.split == "train" for t in tasks) == 16 and sum(t.split == "eval" for t in tasks) == 20
