"""DB-Bench: SQL that tries to earn credit without answering the question, played on every task."""

from __future__ import annotations

import re

import pytest
from upstream import upstream_path

from adversarial.hacks import Hack, assert_no_gain, play_hack
from harness_gym.core.task import Task
from harness_gym.domains.dbbench import HarnessDBBenchEnv
from harness_gym.domains.dbbench.engine import columns_of, quote_ident, result_values, run_sql
from harness_gym.domains.dbbench.verifier import MODIFY_TYPES, artifact_scores

FUNCTIONAL = ("correctness",)
ENV = HarnessDBBenchEnv
_SIMPLE_SELECT = re.compile(r"SELECT (?P<what>.+?) FROM (?P<table>`[^`]+`)(?P<where> WHERE .+)?$", re.S)


def plain(task: Task) -> str:
    """The first pool statement that runs but answers wrongly (else the first wrong one)."""
    payload = task.payload
    wrong = [
        i["source"]
        for i in payload["pool"]
        if artifact_scores(payload["record"], i["source"])["correctness"][0] == 0
    ]
    runs = [text for text in wrong if artifact_scores(payload["record"], text)["executes"][0] > 0]
    return (runs or wrong)[0]


def _table(task: Task) -> str:
    return quote_ident(task.payload["record"]["table"]["table_name"])


def _is_question(task: Task) -> bool:
    return task.payload["record"]["type"][0] not in MODIFY_TYPES


def _is_modification(task: Task) -> bool:
    return not _is_question(task)


def wrong_then_reference(task: Task) -> str:
    return f"{plain(task)}; {task.payload['reference']}"


def reference_then_wrong(task: Task) -> str:
    return f"{task.payload['reference']};\n{plain(task)};"


def schema_table(task: Task) -> str:
    return "SELECT name, sql FROM sqlite_master"


def cross_join(task: Task) -> str:
    t = _table(task)
    return "SELECT COUNT(*) FROM " + ", ".join(f"{t} AS x{i}" for i in range(8))


def every_row(task: Task) -> str:
    return f"SELECT * FROM {_table(task)}"


def every_cell_as_final_answer(task: Task) -> str:
    record = task.payload["record"]
    cells = result_values(run_sql(record, f"SELECT * FROM {_table(task)}").rows)
    return "Final Answer: " + repr([str(c) for c in cells])


def _simple(task: Task) -> re.Match[str] | None:
    reference = task.payload["reference"]
    match = _SIMPLE_SELECT.fullmatch(reference)
    plain_read = match is not None and not re.search(
        r"COUNT|SUM|AVG|MIN|MAX|ORDER|GROUP|DISTINCT", reference, re.I
    )
    return match if plain_read else None


def write_returning(task: Task) -> str:
    """The reference query's rows, returned by an UPDATE that rewrites them (a write on a question)."""
    match = _simple(task)
    assert match is not None
    column = quote_ident(columns_of(task.payload["record"])[0])
    where = match["where"] or " WHERE 1"
    return f"UPDATE {match['table']} SET {column} = {column}{where} RETURNING {match['what']}"


def noop_write(task: Task) -> str:
    column = quote_ident(columns_of(task.payload["record"])[0])
    return f"UPDATE {_table(task)} SET {column} = {column} WHERE 0"


def drop_table(task: Task) -> str:
    return f"DROP TABLE {_table(task)}"


def rename_table(task: Task) -> str:
    return f"ALTER TABLE {_table(task)} RENAME TO scratch"


HACKS: dict[str, Hack] = (
    {
        f.__name__: Hack(plain, f)
        for f in (
            wrong_then_reference,
            reference_then_wrong,
            schema_table,
            cross_join,
            drop_table,
            rename_table,
        )
    }
    | {f.__name__: Hack(plain, f, where=_is_question) for f in (every_row, every_cell_as_final_answer)}
    | {
        "write_returning": Hack(
            plain, write_returning, where=lambda task: _is_question(task) and bool(_simple(task))
        ),
        "noop_write": Hack(plain, noop_write, where=_is_modification),
    }
)


@pytest.mark.parametrize("split", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_no_more_than_the_plain_wrong_answer(name: str, split: str) -> None:
    assert_no_gain(*play_hack(ENV, HACKS[name], split=split), FUNCTIONAL, name)


UPSTREAM_HACKS = sorted(name for name in HACKS if name != "write_returning")
"""write_returning needs a plain ``SELECT cols FROM t WHERE ...`` reference, which the upstream eval tasks
picked by default do not have."""


@pytest.mark.parametrize("name", UPSTREAM_HACKS)
def test_hack_earns_nothing_on_upstream_records(name: str) -> None:
    data = str(upstream_path("dbbench"))
    plain_played, hacked = play_hack(ENV, HACKS[name], split="eval", data_path=data)
    assert_no_gain(plain_played, hacked, FUNCTIONAL, name)
