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
from harness_gym.domains.dbbench.engine import quote_ident, result_values, run_sql
from harness_gym.domains.dbbench.verifier import artifact_scores
from harness_gym.domains.generation import task_record

DOMAIN = "dbbench"
OUT = "dbbench-v0.jsonl"

# theme: (table name, key column, two categorical columns with values, two numeric columns with ranges)
THEMES: dict[str, list[dict[str, Any]]] = {
    "train": [
        {
            "table": "staff_directory",
            "key": ("Employee", ["Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan"]),
            "cats": [("Department", ["Sales", "Finance", "Legal"]), ("Office", ["Leeds", "Porto", "Lyon"])],
            "nums": [("Salary", 3000, 9000), ("Tenure", 1, 20)],
        },
        {
            "table": "library_catalogue",
            "key": ("Title", ["Ash Road", "Blue Hour", "Cold Rain", "Dry Creek", "Echo Bay", "Fog Line"]),
            "cats": [("Genre", ["Mystery", "Poetry", "History"]), ("Shelf", ["North", "South", "East"])],
            "nums": [("Pages", 90, 700), ("Loans", 0, 60)],
        },
        {
            "table": "fleet_register",
            "key": ("Vehicle", ["Van 11", "Van 12", "Truck 3", "Truck 7", "Bus 2", "Bus 5", "Cab 9"]),
            "cats": [("Depot", ["Harbor", "Airport", "Central"]), ("Fuel", ["Diesel", "Electric", "Hybrid"])],
            "nums": [("Mileage", 1000, 90000), ("Seats", 2, 50)],
        },
    ],
    "eval": [
        {
            "table": "Regional Athletics Results",
            "key": ("Athlete", ["Ana Sousa", "Bea Klein", "Cleo Marsh", "Dina Roy", "Eva Lund", "Fay Ortiz"]),
            "cats": [("Nation", ["Kenya", "Chile", "Norway"]), ("Event", ["Sprint", "Relay", "Hurdles"])],
            "nums": [("Points", 10, 99), ("Age", 18, 38)],
        },
        {
            "table": "Festival Film Programme",
            "key": (
                "Film",
                ["Night Tide", "Paper Moon", "Red Lantern", "Salt Flats", "Tin Star", "Wild Oats"],
            ),
            "cats": [
                ("Studio", ["Aurora", "Meridian", "Zenith"]),
                ("Language", ["French", "Korean", "Hindi"]),
            ],
            "nums": [("Runtime", 80, 190), ("Screens", 1, 40)],
        },
        {
            "table": "Coastal Weather Stations",
            "key": (
                "Station",
                ["Cape Ives", "Dune Point", "Gull Rock", "Kelp Bay", "Reef Head", "Tern Isle"],
            ),
            "cats": [
                ("Region", ["Atlantic", "Pacific", "Arctic"]),
                ("Status", ["Active", "Paused", "Manual"]),
            ],
            "nums": [("Rainfall", 100, 2500), ("Elevation", 2, 400)],
        },
    ],
}

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

PHRASES = {
    "a": {
        "other": "What is the {col} of {key}?",
        "counting": "How many rows have {cat} equal to {val}?",
        "aggregation-SUM": "What is the total {num} of rows whose {cat} is {val}?",
        "aggregation-AVG": "What is the average {num} of rows whose {cat} is {val}?",
        "aggregation-MAX": "What is the highest {num} among rows whose {cat} is {val}?",
        "aggregation-MIN": "What is the lowest {num} among rows whose {cat} is {val}?",
        "ranking": "Which {keycol} has the largest {num}?",
        "comparison": "Which {keycol} values have {cat} {val} and {num} above {threshold}?",
        "INSERT": "Insert a new row into the {table} table: {pairs}.",
        "UPDATE": "Set {col} to '{new}' for {keycol} '{key}' in the {table} table.",
        "UPDATE-multi": "For rows of {table} with {cat} '{val}' and {cat2} '{val2}', set {col} to '{new}'.",
    },
    "b": {
        "other": "Tell me the {col} recorded for {key}.",
        "counting": "Count the entries where {cat} is '{val}'.",
        "aggregation-SUM": "Sum up {num} over the entries listed under {cat} '{val}'.",
        "aggregation-AVG": "Give the mean {num} for entries with {cat} '{val}'.",
        "aggregation-MAX": "Find the maximum {num} reported for {cat} '{val}'.",
        "aggregation-MIN": "Find the minimum {num} reported for {cat} '{val}'.",
        "ranking": "Name the {keycol} ranked first by {num}.",
        "comparison": "List every {keycol} from {cat} '{val}' whose {num} exceeds {threshold}.",
        "INSERT": "Record this new entry in '{table}' with an INSERT statement: {pairs}.",
        "UPDATE": "Change the {col} of {key} to {new} in '{table}'.",
        "UPDATE-multi": "Where {cat} is {val} and {cat2} is {val2}, change {col} to {new} in '{table}'.",
    },
}


def _table(theme: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    key_col, keys = theme["key"]
    cols = [key_col] + [c for c, _ in theme["cats"]] + [n for n, _, _ in theme["nums"]]
    rows = []
    for key in keys:
        row = [key] + [rng.choice(vals) for _, vals in theme["cats"]]
        row += [str(rng.randint(lo, hi)) for _, lo, hi in theme["nums"]]
        rows.append(row)
    return {
        "table_name": theme["table"],
        "table_info": {"columns": [{"name": c, "type": "TEXT"} for c in cols], "rows": rows},
    }


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _build(kind: str, theme: Mapping[str, Any], rng: random.Random, variant: str) -> dict[str, Any]:
    """One record (gold SQL + flawed variants) of a type on a fresh table of the theme."""
    table = _table(theme, rng)
    rows = table["table_info"]["rows"]
    t = quote_ident(theme["table"])
    key_col = theme["key"][0]
    (cat, cat_vals), (cat2, _cat2_vals) = theme["cats"]
    (num, _, _), (num2, _, _) = theme["nums"]
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
        new = [f"New {theme['key'][1][0].split()[0]} {rng.randint(20, 99)}", val, val2, "7", "3"]
        cols = ", ".join(quote_ident(x["name"]) for x in table["table_info"]["columns"])
        names = [x["name"] for x in table["table_info"]["columns"]]
        fields["pairs"] = ", ".join(f"{name} = {v}" for name, v in zip(names, new, strict=True))
        values = ", ".join(_lit(v) for v in new)
        gold = f"INSERT INTO {t} ({cols}) VALUES ({values})"
        swapped = ", ".join(_lit(v) for v in [new[0], new[2], new[1], new[3], new[4]])
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


def prompt_of(record: Mapping[str, Any]) -> str:
    return (
        f"{record['description']}\n{record['add_description']}\n"
        "Answer with ONE MySQL statement in a ```sql fence (for a question, a SELECT whose result is the "
        'answer; you may instead reply `Final Answer: ["v1", ...]`).'
    )


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
    write_jsonl(generate_records(), path or packaged_task_file(OUT))


if __name__ == "__main__":
    main()
