"""DB-Bench's MDP v2 task set (``dbbench-v1.jsonl``): statement types and table widths in upstream's shares.

Counted from AgentBench's DB-Bench test split (``data/dbbench/standard.jsonl``, 300 records, THUDM/AgentBench
@ 578c5e9; Liu et al. 2023, arXiv 2308.03688) and apportioned to 36 tasks by largest remainder
(``generation.apportion``):

- statement types (``TYPE_COUNTS``): SELECT family 100 (other, counting, comparison, ranking 17 each;
  aggregation SUM / MIN / MAX / AVG 8 each), INSERT 100, UPDATE 100 -> 12 / 12 / 12 of 36, the SELECT
  twelve 2 / 2 / 2 / 2 and 1 / 1 / 1 / 1;
- WHERE conditions of the UPDATEs (``UPDATE_CONDITIONS``): one in 87, two or three in 13 -> 10 single-row
  UPDATEs and 2 with two conditions;
- table width, columns (``WIDTH_COUNTS``): 3: 13, 4: 46, 5: 95, 6: 88, 7: 30, 8: 7, 9: 12, 10-17: 9 ->
  3: 2, 4: 6, 5: 11, 6: 11, 7: 4, 8: 1, 9: 1. The generator's statements read five columns (key, two
  categories, two numbers), so the 8 tables of three or four columns get five; wider ones get filler
  columns (``EXTRAS``) no statement reads, which an INSERT must still fill.

Train (16) and eval (20) keep the paper's set's separation: disjoint themes, phrasings and table-name
styles. Hidden difficulty is the upstream adapter's rule per statement type (``upstream.DIFFICULTY``:
INSERT and other easy, comparisons and aggregations hard, the rest standard; an
assumption, as there: no per-type success rate of AgentBench's models was found).

Measured (``benchmarks/task_need.py --env HarnessDBBench-v0 --obs-layout v2``, train split): the string x
task interaction SD rose from 0.000 (the paper's set) to 0.024 with this mix, but choosing a string per
task (or per step-0 view) on one episode set still scores no better than the one best string on another
(-0.010 [-0.044, +0.006]): every statement is served by the same harness here (two fixed exploratory
queries, the same informedness for every statement, no step pressure), and no per-type rate was found
that would set how often a first draft of each type is right.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from harness_gym.core.task import write_jsonl
from harness_gym.domains.dbbench.generate import DOMAIN, THEMES, Extra, _build
from harness_gym.domains.dbbench.upstream import _difficulty, prompt_of
from harness_gym.domains.generation import MDP2_VERSION, apportion, task_file, task_record

TYPE_COUNTS = {
    "other": 17,
    "counting": 17,
    "comparison": 17,
    "ranking": 17,
    "aggregation-SUM": 8,
    "aggregation-MIN": 8,
    "aggregation-MAX": 8,
    "aggregation-AVG": 8,
    "INSERT": 100,
    "UPDATE": 100,
}
"""Upstream test records by ``type``."""
UPDATE_CONDITIONS = {1: 87, 2: 13}
"""Upstream UPDATEs by the conditions in their gold WHERE clause (13 = 10 with two + 3 with three)."""
WIDTH_COUNTS = {3: 13, 4: 46, 5: 95, 6: 88, 7: 30, 8: 7, 9: 12, 10: 2, 11: 2, 12: 2, 14: 2, 17: 1}
"""Upstream test tables by their number of columns."""
MIN_WIDTH = 5
EXTRAS: tuple[Extra, ...] = (
    ("Record Code", ("A-101", "B-202", "C-303", "D-404")),
    ("Last Updated", ("2021-03-04", "2022-07-19", "2023-01-30", "2023-11-02")),
    ("Contact", ("Kim Lee", "Sam Ortiz", "Ray Ito", "Lou Park")),
    ("Rating", ("1", "2", "3", "4", "5")),
)
N_TASKS = {"train": 16, "eval": 20}


def plan() -> dict[str, list[tuple[str, int]]]:
    """(kind, table width) of each task per split: types apportioned to 36, then dealt to the splits in
    proportion (each split gets each SELECT kind it can), widths shuffled over the tasks (seeded)."""
    total = sum(N_TASKS.values())
    types = apportion(TYPE_COUNTS, total)
    updates = apportion(UPDATE_CONDITIONS, types.pop("UPDATE"))
    kinds = [k for k, n in types.items() for _ in range(n)]
    kinds += ["UPDATE-multi"] * updates[2] + ["UPDATE"] * updates[1]
    widths = [max(w, MIN_WIDTH) for w, n in apportion(WIDTH_COUNTS, total).items() for _ in range(n)]
    random.Random(f"{DOMAIN}-{MDP2_VERSION}/widths").shuffle(widths)
    splits: dict[str, list[str]] = {"train": [], "eval": []}
    group = {k: "aggregation" if k.startswith("aggregation") else k for k in kinds}
    for i, kind in enumerate(kinds):  # alternate within each kind (aggregations as one): both splits get each
        same = sum(1 for k in kinds[:i] if group[k] == group[kind])
        target = "eval" if same % 2 == 0 else "train"
        if len(splits[target]) == N_TASKS[target]:
            target = "train" if target == "eval" else "eval"
        splits[target].append(kind)
    out, w = {}, iter(widths)
    for split in ("train", "eval"):
        out[split] = [(kind, next(w)) for kind in splits[split]]
    return out


def generate_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for split, variant in (("train", "a"), ("eval", "b")):
        rng = random.Random(f"{DOMAIN}-{MDP2_VERSION}-{split}")
        themes = THEMES[split]
        for i, (kind, width) in enumerate(plan()[split]):
            extras = EXTRAS[: width - MIN_WIDTH]
            for attempt in range(50):
                built = _build(kind, themes[(i + attempt) % len(themes)], rng, variant, extras)
                if len(built["pool"]) >= 3 and (kind != "comparison" or built["record"]["label"]):
                    break
            else:  # pragma: no cover - the generator is deterministic
                raise RuntimeError(f"could not build a {kind} task")
            record_type = built["record"]["type"][0]
            records.append(
                task_record(
                    DOMAIN,
                    f"{DOMAIN}-{MDP2_VERSION}-{len(records):03d}",
                    _difficulty(record_type),
                    split,
                    f"{kind}:{variant}",
                    prompt_of(built["record"]),
                    built,
                    MDP2_VERSION,
                )
            )
    return records


def main(path: Path | None = None) -> None:
    """Write MDP v2's set (``dbbench-v1.jsonl``)."""
    write_jsonl(generate_records(), path or task_file(DOMAIN, MDP2_VERSION))


if __name__ == "__main__":
    main()
