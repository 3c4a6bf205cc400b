"""Deterministic DB-Bench task generator: tables + questions in AgentBench's record format.

36 tasks (16 train / 20 eval): every record has an upstream-shaped ``record`` (description, table,
type, label, answer_md5/sql, add_description, heads, ...). The gold SQL is run on the SQLite engine to
produce ``label`` (SELECT family) or ``answer_md5`` (INSERT/UPDATE, the upstream table hash). Train
and eval use disjoint table themes (entities), disjoint question phrasings (template variant ``a`` vs
``b``) and different table-name styles (snake_case vs Title Case needing backticks).

Pool of flawed SQL per task: wrong_aggregate, wrong_filter, wrong_column, syntax_error, wrong_table
(each kept only if it really scores below the maximum).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.core.task import packaged_task_file, write_jsonl
from harness_gym.domains.base import read_toml
from harness_gym.domains.dbbench.engine import quote_ident, result_values, run_sql
from harness_gym.domains.dbbench.upstream import prompt_of
from harness_gym.domains.dbbench.verifier import artifact_scores
from harness_gym.domains.generation import task_record

DOMAIN = "dbbench"
OUT = "dbbench-v0.jsonl"

_DATA = read_toml(__package__, "themes.toml")
THEMES: dict[str, list[dict[str, Any]]] = _DATA["theme"]
"""Per split, the table themes (``themes.toml``): name, key column and values, categorical and numeric
columns."""

# (type, difficulty) per split; eval 4 easy / 12 standard / 4 hard, train 3 / 10 / 3.
PLAN: dict[str, list[tuple[str, str]]] = {
    "eval": [("other", "easy")] * 2
    + [("INSERT", "easy")] * 2
    + [
        (t, "standard")
        for t in (
            "counting",
            "counting",
            "aggregation-SUM",
            "aggregation-AVG",
            "aggregation-MAX",
            "aggregation-MIN",
            "ranking",
            "ranking",
            "UPDATE",
            "UPDATE",
            "UPDATE",
            "counting",
        )
    ]
    + [("comparison", "hard")] * 2
    + [("UPDATE-multi", "hard")] * 2,
    "train": [("other", "easy"), ("other", "easy"), ("INSERT", "easy")]
    + [
        (t, "standard")
        for t in (
            "counting",
            "aggregation-SUM",
            "aggregation-AVG",
            "aggregation-MAX",
            "aggregation-MIN",
            "ranking",
            "UPDATE",
            "UPDATE",
            "counting",
            "ranking",
        )
    ]
    + [("comparison", "hard"), ("UPDATE-multi", "hard"), ("comparison", "hard")],
}

PHRASES: dict[str, dict[str, str]] = _DATA["phrases"]
"""Question phrasings per variant (``a``: train, ``b``: eval) and record type (``themes.toml``)."""


Extra = tuple[str, tuple[str, ...]]
"""A column beyond a theme's five (name, values), which no statement reads: a wider table."""


def _table(theme: Mapping[str, Any], rng: random.Random, extras: tuple[Extra, ...] = ()) -> dict[str, Any]:
    cats, nums = theme["categories"], theme["numbers"]
    cols = [theme["key"], *cats, *nums, *(name for name, _ in extras)]
    rows = []
    for key in theme["keys"]:
        row = [key] + [rng.choice(vals) for vals in cats.values()]
        row += [str(rng.randint(lo, hi)) for lo, hi in nums.values()]
        row += [rng.choice(values) for _, values in extras]
        rows.append(row)
    return {
        "table_name": theme["table"],
        "table_info": {"columns": [{"name": c, "type": "TEXT"} for c in cols], "rows": rows},
    }


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _build(
    kind: str, theme: Mapping[str, Any], rng: random.Random, variant: str, extras: tuple[Extra, ...] = ()
) -> dict[str, Any]:
    """One record (gold SQL + flawed variants) of a type on a fresh table of the theme (plus ``extras``)."""
    table = _table(theme, rng, extras)
    rows = table["table_info"]["rows"]
    t = quote_ident(theme["table"])
    key_col = theme["key"]
    (cat, cat_vals), (cat2, _) = theme["categories"].items()
    num, num2 = theme["numbers"]
    k, c, c2, n, n2 = (quote_ident(x) for x in (key_col, cat, cat2, num, num2))
    row = rng.choice(rows)
    val, val2 = row[1], row[2]
    wrong_val = next(v for v in cat_vals if v != val)
    fields = dict(table=theme["table"], keycol=key_col, cat=cat, cat2=cat2, num=num, val=val, val2=val2)
    bad_t = quote_ident(theme["table"] + "_old")
    flaws: list[tuple[str, str]] = []
    if kind == "other":
        fields.update(col=cat2, key=row[0])
        gold = f"SELECT {c2} FROM {t} WHERE {k} = {_lit(row[0])}"
        other_key = next((r[0] for r in rows if r[2] != row[2]), rows[0][0])
        flaws = [
            ("wrong_filter", f"SELECT {c2} FROM {t} WHERE {k} = {_lit(other_key)}"),
            ("wrong_column", f"SELECT {c} FROM {t} WHERE {k} = {_lit(row[0])}"),
            ("wrong_aggregate", f"SELECT COUNT({c2}) FROM {t} WHERE {k} = {_lit(row[0])}"),
        ]
    elif kind == "counting" or kind.startswith("aggregation"):
        fn = {"counting": "COUNT", "aggregation-SUM": "SUM", "aggregation-AVG": "AVG"}.get(kind)
        fn = fn or kind.split("-")[1]
        expr = "*" if fn == "COUNT" else f"{n} + 0"
        alt = {"COUNT": "SUM", "SUM": "AVG", "AVG": "SUM", "MAX": "MIN", "MIN": "MAX"}[fn]
        alt_expr = f"{n} + 0" if fn == "COUNT" else expr
        gold = f"SELECT {fn}({expr}) FROM {t} WHERE {c} = {_lit(val)}"
        flaws = [
            ("wrong_aggregate", f"SELECT {alt}({alt_expr}) FROM {t} WHERE {c} = {_lit(val)}"),
            ("wrong_filter", f"SELECT {fn}({expr}) FROM {t} WHERE {c} = {_lit(wrong_val)}"),
            ("wrong_column", f"SELECT {fn}({n2} + 0) FROM {t} WHERE {c} = {_lit(val)}"),
        ]
    elif kind == "ranking":
        gold = f"SELECT {k} FROM {t} ORDER BY {n} + 0 DESC LIMIT 1"
        flaws = [
            ("wrong_aggregate", f"SELECT {k} FROM {t} ORDER BY {n} + 0 ASC LIMIT 1"),
            ("wrong_filter", f"SELECT {k} FROM {t} ORDER BY {n} DESC LIMIT 1"),
            ("wrong_column", f"SELECT {k} FROM {t} ORDER BY {n2} + 0 DESC LIMIT 1"),
        ]
    elif kind == "comparison":
        matching = sorted(int(r[3]) for r in rows if r[1] == val)
        threshold = matching[0] - 1 if len(matching) == 1 else (matching[0] + matching[-1]) // 2
        fields["threshold"] = str(threshold)
        cond = f"{c} = {_lit(val)} AND {n} + 0 > {threshold}"
        gold = f"SELECT {k} FROM {t} WHERE {cond}"
        flaws = [
            ("wrong_filter", f"SELECT {k} FROM {t} WHERE {c} = {_lit(val)} AND {n} > '{threshold}'"),
            ("wrong_aggregate", f"SELECT COUNT(*) FROM {t} WHERE {cond}"),
            ("wrong_column", f"SELECT {k} FROM {t} WHERE {c} = {_lit(val)} AND {n2} + 0 > {threshold}"),
            ("wrong_filter", f"SELECT {k} FROM {t} WHERE {c} = {_lit(wrong_val)} AND {n} + 0 > {threshold}"),
        ]
    elif kind == "INSERT":
        new = [f"New {theme['keys'][0].split()[0]} {rng.randint(20, 99)}", val, val2, "7", "3"]
        new += [values[0] for _, values in extras]
        cols = ", ".join(quote_ident(x["name"]) for x in table["table_info"]["columns"])
        names = [x["name"] for x in table["table_info"]["columns"]]
        fields["pairs"] = ", ".join(f"{name} = {v}" for name, v in zip(names, new, strict=True))
        values = ", ".join(_lit(v) for v in new)
        gold = f"INSERT INTO {t} ({cols}) VALUES ({values})"
        swapped = ", ".join(_lit(v) for v in [new[0], new[2], new[1], *new[3:]])
        flaws = [
            ("wrong_column", f"INSERT INTO {t} ({cols}) VALUES ({swapped})"),
            ("wrong_filter", f"INSERT INTO {t} ({cols}) VALUES ({values.replace(_lit(new[3]), _lit('70'))})"),
            ("wrong_aggregate", f"INSERT INTO {t} ({cols}) VALUES ({values}), ({values})"),
        ]
    else:
        new = str(rng.randint(100, 999))
        if kind == "UPDATE":
            fields.update(col=num2, key=row[0], new=new)
            where = f"{k} = {_lit(row[0])}"
            other_key = next(r[0] for r in rows if r[0] != row[0])
            wrong_where = f"{k} = {_lit(other_key)}"
        else:
            fields.update(col=num2, new=new)
            where = f"{c} = {_lit(val)} AND {c2} = {_lit(val2)}"
            wrong_where = f"{c} = {_lit(val)} OR {c2} = {_lit(val2)}"
        gold = f"UPDATE {t} SET {n2} = {_lit(new)} WHERE {where}"
        flaws = [
            ("wrong_filter", f"UPDATE {t} SET {n2} = {_lit(new)} WHERE {wrong_where}"),
            ("wrong_column", f"UPDATE {t} SET {n} = {_lit(new)} WHERE {where}"),
            ("wrong_aggregate", f"UPDATE {t} SET {n2} = {n2} + {new} WHERE {where}"),
        ]
    flaws.append(
        (
            "syntax_error",
            gold.replace(" FROM ", " FORM ")
            .replace(" SET ", " SETT ", 1)
            .replace("INSERT INTO", "INSERT INT", 1),
        )
    )
    flaws.append(("wrong_table", gold.replace(t, bad_t, 1)))
    record_type = "UPDATE" if kind.startswith("UPDATE") else kind
    description = PHRASES[variant][kind].format(**fields)
    heads = [x["name"] for x in table["table_info"]["columns"]]
    record: dict[str, Any] = {
        "description": description,
        "add_description": (
            f"The name of this table is {theme['table']}, "
            f"and the headers of this table are {','.join(heads)}."
        ),
        "table": table,
        "type": [record_type],
        "heads": heads,
        "source": "generated",
        "create": {"database": "generated", "init": ""},
        "evaluation": "",
        "example": "",
    }
    execution = run_sql(record, gold)
    assert execution.ok, (gold, execution.error)
    if record_type in ("INSERT", "UPDATE"):
        record["label"] = [gold]
        record["answer_md5"] = execution.table_hash
    else:
        record["label"] = [str(v) for v in result_values(execution.rows)]
        record["sql"] = {"query": gold, "length": len(gold)}
    pool = [
        {"flaw": flaw, "source": sql}
        for flaw, sql in flaws
        if sum(s for s, _ in artifact_scores(record, sql).values()) < 1.0 - 1e-9
    ]
    return {"record": record, "reference": gold, "pool": pool}


def generate_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for split, variant in (("train", "a"), ("eval", "b")):
        rng = random.Random(f"dbbench-{split}")
        themes = THEMES[split]
        for i, (kind, difficulty) in enumerate(PLAN[split]):
            for attempt in range(50):
                built = _build(kind, themes[(i + attempt) % len(themes)], rng, variant)
                if len(built["pool"]) >= 3 and (kind != "comparison" or built["record"]["label"]):
                    break
            else:  # pragma: no cover - the generator is deterministic
                raise RuntimeError(f"could not build a {kind} task")
            task_id, prompt = f"{DOMAIN}-{len(records):03d}", prompt_of(built["record"])
            records.append(
                task_record(DOMAIN, task_id, difficulty, split, f"{kind}:{variant}", prompt, built)
            )
    return records


def main(path: Path | None = None) -> None:
    """Write the paper's set (``dbbench-v0.jsonl``; MDP v2's is ``generate_mdp2.py``'s)."""
    write_jsonl(generate_records(), path or packaged_task_file(OUT))


if __name__ == "__main__":
    main()
