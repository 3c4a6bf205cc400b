"""Knowledge work: the verifier, the shipped ``knowledge_work-v0`` task set and the env's action semantics."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from upstream import gather_all, one_localised_rate

from harness_gym.core.actions import Action
from harness_gym.core.rubric import g_norm
from harness_gym.core.task import read_jsonl, write_jsonl
from harness_gym.domains.base import GROUNDING_WEIGHT
from harness_gym.domains.generation import MDP2_VERSION, POOL_MAX, POOL_MIN
from harness_gym.domains.knowledge_work import (
    DRAFT_PARAMS,
    NOISE_COST,
    RETRIEVE_CAP,
    HarnessKnowledgeWorkEnv,
    KnowledgeWorkDomain,
)
from harness_gym.domains.knowledge_work import generate as gen
from harness_gym.domains.knowledge_work import generate_mdp2 as gen_mdp2
from harness_gym.domains.knowledge_work.verifier import (
    BASE_CRITERIA,
    CRITERIA,
    artifact_scores,
    bm25_ranking,
    build_index,
    criteria_for,
    dates_in,
    format_figure,
    notes_conflict,
    numbers_in,
    observable_check,
    parse_date,
    parse_number,
    parse_report,
    parse_table,
    read_report,
    support_fraction,
    table_calc,
)
from harness_gym.evaluation.paper import BASE_G, CALIBRATION_TOLERANCE, EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import run_protocol, summarize

FLAWS = set(gen.FLAWS)


# ---- hand-built tasks -----------------------------------------------------------------------------

MEMO = """MEMO MEMO-101
From: Ann Lee
To: Lisbon office leadership
Date: 2024-07-03
Subject: Q3 2024 travel budget, Lisbon office

The travel budget of the Lisbon office for Q3 2024 has been set at EUR 120,500. Bob Stone approved this
figure on 3 July 2024."""
FIX = """EMAIL EMAIL-202
From: Eve Park
To: Lisbon office leadership
Date: July 20, 2024
Subject: Correction: Q3 2024 travel budget, Lisbon office

The memo MEMO-101 quoted the wrong figure: the travel budget is EUR 118,000, not EUR 120,500. Bob
Stone's approval of 3 July 2024 covers the corrected amount."""
OTHER = """MEMO MEMO-404
From: Ann Lee
To: Porto office leadership
Date: 2024-06-28
Subject: Q3 2024 travel budget, Porto office

The travel budget of the Porto office for Q3 2024 is EUR 99,000, approved by Cara Diaz on 2024-06-28."""
LEDGER = """TABLE TABLE-303: Travel spend by office and month
Exported: 2024-10-05
Budget owners: Lisbon: Dina Ruiz; Porto: Finn Oak

month,office,category,amount_eur
2024-06,Lisbon,travel,5000
2024-07,Lisbon,travel,1200
2024-07,Porto,travel,700
2024-08,Lisbon,travel,1300
2024-08,Lisbon,admin,400
2024-09,Lisbon,travel,1500.50"""


def _src(sid: str, kind: str, text: str) -> dict[str, str]:
    return {"id": sid, "kind": kind, "title": text.splitlines()[0], "text": text}


SOURCES = [
    _src("MEMO-101", "memo", MEMO),
    _src("EMAIL-202", "email", FIX),
    _src("MEMO-404", "memo", OTHER),
    _src("TABLE-303", "table", LEDGER),
]
Q3 = ["2024-07", "2024-08", "2024-09"]


def lookup_payload() -> dict[str, Any]:
    """Hard look-up: the memo's figure is corrected by a later email."""
    fields = [["figure", "FIGURE"], ["person", "APPROVER"], ["date", "APPROVED_ON"]]
    fields += [["conflict", "CONFLICT"], ["sources", "SOURCES"]]
    return {
        "question": "What is the approved Q3 2024 travel budget of the Lisbon office, who approved it, when?",
        "format": {"style": "colon", "fields": fields, "figure_kind": "money", "person_role": "approver"},
        "sources": SOURCES,
        "calc": {"op": "filter", "filters": {"office": "Lisbon"}},
        "gold": {
            "figure": 118000,
            "person": "Bob Stone",
            "date": "2024-07-03",
            "sources": ["MEMO-101", "EMAIL-202"],
            "superseded": {"source": "MEMO-101", "figure": 120500},
        },
    }


def table_payload() -> dict[str, Any]:
    """A filtered sum over the ledger; the owner is in the table header."""
    fields = [["figure", "total"], ["person", "owner"], ["date", "as_of"], ["sources", "citations"]]
    return {
        "question": "What was the total Q3 2024 travel spend of the Lisbon office, and who owns the budget?",
        "format": {"style": "json", "fields": fields, "figure_kind": "money", "person_role": "owner"},
        "sources": SOURCES,
        "calc": {
            "op": "sum",
            "column": "amount_eur",
            "filters": {"office": "Lisbon", "category": "travel"},
            "period": {"column": "month", "months": Q3},
        },
        "gold": {
            "figure": 4000.5,
            "person": "Dina Ruiz",
            "date": "2024-10-05",
            "sources": ["TABLE-303"],
            "superseded": None,
        },
    }


def colon(
    figure: str = "118,000",
    person: str = "Bob Stone",
    day: str = "2024-07-03",
    conflict: str = "MEMO-101 (EUR 120,500) is superseded by EMAIL-202",
    sources: str = "MEMO-101, EMAIL-202",
    drop: str = "",
) -> str:
    lines = {
        "FIGURE": figure,
        "APPROVER": person,
        "APPROVED_ON": day,
        "CONFLICT": conflict,
        "SOURCES": sources,
    }
    return "\n".join(f"{k}: {v}" for k, v in lines.items() if k != drop)


def rubric(payload: dict[str, Any], text: str) -> dict[str, tuple[float, float]]:
    return artifact_scores(payload, text).rubric


def frac(scores: dict[str, tuple[float, float]], name: str) -> float:
    score, top = scores[name]
    return score / top


def test_correct_reports_score_full_marks() -> None:
    scores = rubric(lookup_payload(), colon())
    assert set(scores) == set(CRITERIA) and g_norm(scores) == 1.0
    for variant in (
        colon(figure="EUR 118,000.00"),
        colon(figure="118000", person="  bob   STONE "),
        colon(conflict="the memo said 120,500; the correction email supersedes it"),
    ):
        assert g_norm(rubric(lookup_payload(), variant)) == 1.0, variant
    json_report = '{"total": 4000.5, "owner": "Dina Ruiz", "as_of": "2024-10-05", "citations": ["TABLE-303"]}'
    scores = rubric(table_payload(), json_report)
    assert set(scores) == set(BASE_CRITERIA) and g_norm(scores) == 1.0
    as_string = json_report.replace("4000.5", '"4,000.50"')
    assert g_norm(rubric(table_payload(), as_string)) == 1.0


def test_superseded_value_loses_answer_and_conflict_but_keeps_support() -> None:
    scores = rubric(lookup_payload(), colon(figure="120,500", conflict="none", sources="MEMO-101"))
    assert frac(scores, "answer_correctness") == 0.0
    assert frac(scores, "evidence_support") == 1.0  # the memo does say 120,500
    assert frac(scores, "source_conflict") == 0.0
    assert frac(scores, "criterion_coverage") == pytest.approx(2 / 5)  # approver and date still right
    assert frac(scores, "output_format") == 1.0
    noted = rubric(lookup_payload(), colon(conflict="none"))
    assert frac(noted, "source_conflict") == 0.5 and frac(noted, "answer_correctness") == 1.0


def test_distractor_figure_is_unsupported_by_the_cited_gold_sources() -> None:
    scores = rubric(lookup_payload(), colon(figure="99,000"))
    assert frac(scores, "answer_correctness") == 0.0
    assert frac(scores, "evidence_support") == pytest.approx(2 / 3)
    cited_right = rubric(
        lookup_payload(),
        colon(figure="99,000", person="Cara Diaz", day="2024-06-28", conflict="none", sources="MEMO-404"),
    )
    assert frac(cited_right, "evidence_support") == 1.0 and frac(cited_right, "criterion_coverage") == 0.0


def test_citations_must_exist_and_cover_the_gold_sources() -> None:
    none = rubric(lookup_payload(), colon(sources="none"))
    assert frac(none, "evidence_support") == 0.0
    assert frac(none, "criterion_coverage") == pytest.approx(4 / 5)
    partial = rubric(lookup_payload(), colon(sources="EMAIL-202"))
    assert frac(partial, "evidence_support") == 1.0  # the email alone holds figure, approver and date
    assert frac(partial, "criterion_coverage") == pytest.approx(4 / 5)
    fabricated = rubric(lookup_payload(), colon(sources="MEMO-101, EMAIL-202, MEMO-999"))
    assert frac(fabricated, "criterion_coverage") == pytest.approx(4 / 5)
    memo_only = rubric(lookup_payload(), colon(sources="MEMO-101"))
    assert frac(memo_only, "evidence_support") == pytest.approx(2 / 3)  # 118,000 is not in the memo


def test_format_is_judged_strictly_and_content_leniently() -> None:
    report = colon()
    fenced = rubric(lookup_payload(), f"Here you go:\n```\n{report}\n```")
    assert frac(fenced, "output_format") == 0.0 and frac(fenced, "answer_correctness") == 1.0
    bullets = rubric(lookup_payload(), "\n".join(f"- **{line}**" for line in report.splitlines()))
    assert frac(bullets, "output_format") == 0.0 and frac(bullets, "criterion_coverage") == 1.0
    missing = rubric(lookup_payload(), colon(drop="APPROVER"))
    assert frac(missing, "output_format") == 0.0
    assert frac(missing, "criterion_coverage") == pytest.approx(4 / 5)
    prose = "The Lisbon travel budget is EUR 118,000, approved by Bob Stone (MEMO-101, EMAIL-202)."
    assert g_norm(rubric(lookup_payload(), prose)) == 0.0
    assert g_norm(rubric(lookup_payload(), "")) == 0.0
    wrong_style = '{"figure": 118000, "approver": "Bob Stone", "sources": ["MEMO-101"]}'
    assert g_norm(rubric(lookup_payload(), wrong_style)) == 0.0
    json_ok = '{"total": 4000.5, "owner": "Dina Ruiz", "as_of": "2024-10-05", "citations": ["TABLE-303"]}'
    extra_key = json_ok[:-1] + ', "note": "checked"}'
    assert frac(rubric(table_payload(), extra_key), "output_format") == 0.0
    assert frac(rubric(table_payload(), extra_key), "answer_correctness") == 1.0
    sources_string = json_ok.replace('["TABLE-303"]', '"TABLE-303"')
    assert frac(rubric(table_payload(), sources_string), "output_format") == 0.0
    lines = "total: 4000.5\nowner: Dina Ruiz\nas_of: 2024-10-05\ncitations: TABLE-303"
    assert g_norm(rubric(table_payload(), lines)) == 0.0


def test_table_figures_are_recomputed_not_looked_up() -> None:
    def report(total: str) -> str:
        return (
            f'{{"total": {total}, "owner": "Dina Ruiz", "as_of": "2024-10-05", "citations": ["TABLE-303"]}}'
        )

    mean = rubric(table_payload(), report("1333.5"))
    assert frac(mean, "answer_correctness") == 0.0
    assert frac(mean, "evidence_support") == pytest.approx(2 / 3)  # no cell and not the computation
    cell = rubric(table_payload(), report("5000"))  # June's cell: in the table, but the wrong answer
    assert frac(cell, "answer_correctness") == 0.0 and frac(cell, "evidence_support") == 1.0
    near = rubric(table_payload(), report("4000.49"))
    assert frac(near, "answer_correctness") == 0.0  # compared to the cent


def test_table_calc_and_parsing() -> None:
    table = parse_table(LEDGER)
    assert table is not None and len(table.rows) == 6
    base = {
        "column": "amount_eur",
        "filters": {"office": "lisbon", "category": "TRAVEL"},
        "period": {"column": "month", "months": Q3},
    }
    assert table_calc(table, {**base, "op": "sum"}) == (4000.5, 3)
    assert table_calc(table, {**base, "op": "mean"}) == (1333.5, 3)
    assert table_calc(table, {**base, "op": "max"}) == (1500.5, 3)
    assert table_calc(table, {**base, "op": "count", "above": 1250}) == (2.0, 2)
    assert table_calc(table, {"op": "filter", "filters": {"office": "Porto"}}) == (1.0, 1)
    assert table_calc(table, {**base, "op": "sum", "column": "headcount"}) == (None, 0)
    assert table_calc(table, {**base, "op": "sum", "filters": {"office": "Oslo"}}) == (None, 0)
    assert parse_table("no blank line, no table") is None


def test_parse_table_reads_csv_after_the_first_blank_line() -> None:
    """A table is free header lines, a blank line, then CSV: a header row and at least one row. Blank
    lines between rows are skipped, a row with another number of cells is dropped, cells are stripped."""
    desks = parse_table(DESKS)
    assert desks is not None and desks.header == ("floor", "site", "desks")
    assert [row["desks"] for row in desks.rows] == ["12", "30"]
    one = parse_table("T\n\na, b\n1, 2")
    assert one is not None and (one.header, one.rows) == (("a", "b"), ({"a": "1", "b": "2"},))
    ragged = parse_table("T\n\na,b\n1,2\n3\n4,5,6\n7,8")
    assert ragged is not None and [row["a"] for row in ragged.rows] == ["1", "7"]
    assert parse_table("T\n\na,b\n") is None
    assert parse_table("T\na,b\n1,2") is None


def test_table_calc_skips_unreadable_cells_and_needs_every_named_column() -> None:
    """A row whose cell is no number is skipped (the rows after it still count); sums are rounded to the
    cent; ``above`` keeps only values strictly above it; with no column every matching row counts as 0
    (count and filter count rows); a filter or period column the table lacks means the calculation
    cannot apply; an unknown operation is an error naming it."""
    small = parse_table("T\n\nitem,amount\na,0.125\nb,n/a\nc,0.25\n")
    assert small is not None
    assert table_calc(small, {"op": "sum", "column": "amount"}) == (0.38, 2)
    assert table_calc(small, {"op": "sum"}) == (0.0, 3)
    assert table_calc(small, {"op": "count"}) == (3.0, 3)
    with pytest.raises(ValueError, match="unknown table operation 'median'"):
        table_calc(small, {"op": "median", "column": "amount"})
    ledger = parse_table(LEDGER)
    assert ledger is not None
    lisbon_q3 = {
        "filters": {"office": "Lisbon", "category": "travel"},
        "period": {"column": "month", "months": Q3},
    }
    assert table_calc(ledger, {**lisbon_q3, "op": "count", "column": "amount_eur", "above": 1300}) == (1.0, 1)
    no_month = {**lisbon_q3, "period": {"column": "quarter", "months": Q3}}
    assert table_calc(ledger, {**no_month, "op": "sum", "column": "amount_eur"}) == (None, 0)
    no_region = {**lisbon_q3, "filters": {"region": "South"}}
    assert table_calc(ledger, {**no_region, "op": "sum", "column": "amount_eur"}) == (None, 0)


def test_numbers_and_dates_in_text() -> None:
    text = (
        "On 3 July 2024 (ref MEMO-101, Q3) we spent EUR 120,500 and 18.5 hours; see 2024-08 and July 9, 2024."
    )
    assert numbers_in(text) == {12050000, 1850}
    assert dates_in(text) == {"2024-07-03", "2024-07-09"}
    assert dates_in("2024-13-40 is no date") == set()


def test_parse_number_reads_the_first_finite_number_and_nothing_else() -> None:
    """A figure field is a number, or text holding one (thousands commas, decimals, a sign); the first
    number counts. Booleans, infinities, NaN, None and text without a digit are no figure."""
    assert parse_number(184500) == 184500.0
    assert parse_number(18.5) == 18.5
    assert parse_number("EUR 184,500.00") == 184500.0
    assert parse_number("-1,234 then 7") == -1234.0
    assert parse_number("12345.5") == 12345.5
    for no_figure in (True, False, float("inf"), float("-inf"), float("nan"), None, ["1"], "no figure"):
        assert parse_number(no_figure) is None


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("2024-01-01 and 2024-12-31", {"2024-01-01", "2024-12-31"}),
        ("2024-00-10", set()),
        ("2024-13-05", set()),
        ("2024-02-00", set()),
        ("2024-02-32", set()),
        ("1 January 2024, 31 December 2024", {"2024-01-01", "2024-12-31"}),
        ("32 January 2024", set()),
        ("January 1, 2024; December 31, 2024", {"2024-01-01", "2024-12-31"}),
        ("December 0, 2024", set()),
    ],
)
def test_dates_in_reads_each_layout_and_drops_impossible_months_and_days(text: str, dates: set[str]) -> None:
    """Dates are read in ISO, day-month-year and month-day-year layouts; a month outside 1..12 or a day
    outside 1..31 is no date."""
    assert dates_in(text) == dates


def test_parse_date_needs_exactly_one_date() -> None:
    """A date field holds one date (in any layout); none, several, or a non-string is no answer."""
    assert parse_date("approved on 12 July 2024") == "2024-07-12"
    assert parse_date("2024-07-12 or 2024-07-13") is None
    assert parse_date("2024-07-12 (12 July 2024)") == "2024-07-12"
    assert parse_date("no date") is None
    assert parse_date(20240712) is None


_JSON_OK = '{"total": 4000.5, "owner": "Dina Ruiz", "as_of": "2024-10-05", "citations": ["TABLE-303"]}'
_JSON_VALUES = {"figure": 4000.5, "person": "Dina Ruiz", "date": "2024-10-05", "sources": ["TABLE-303"]}


@pytest.mark.parametrize(
    ("text", "values", "problem"),
    [
        (_JSON_OK, _JSON_VALUES, ""),
        (f"  {_JSON_OK}\n", _JSON_VALUES, ""),
        ("no json here", {}, "no JSON object found"),
        ("} {", {}, "no JSON object found"),
        (_JSON_OK + "!", _JSON_VALUES, "text outside the JSON object"),
        ("Report: " + _JSON_OK, _JSON_VALUES, "text outside the JSON object"),
        ('{"total": 4000.5,}', {}, "the JSON object does not parse"),
        ("{}", {}, "no required field found"),
        ('{"Total": 1}', {"figure": 1}, "key 'Total' does not match the required spelling"),
        ('{"total": 1, "TOTAL": 2, "owner": "X"}', {"person": "X"}, "duplicate key 'TOTAL'"),
        ('{"total": 1, "TOTAL": 2, "Total": 3, "owner": "X"}', {"person": "X"}, "duplicate key 'TOTAL'"),
        ('{"note": 1, "total": 1}', {"figure": 1}, "unexpected key 'note'"),
        (
            '{"total": 1, "citations": "TABLE-303"}',
            {"figure": 1, "sources": "TABLE-303"},
            "sources must be a list of ids",
        ),
        ('{"total": 1, "citations": [1]}', {"figure": 1, "sources": [1]}, "sources must be a list of ids"),
    ],
)
def test_a_json_report_is_one_object_with_the_required_keys_once(
    text: str, values: dict[str, Any], problem: str
) -> None:
    """A json-style report is one JSON object, alone (surrounding whitespace aside), with each required
    key once in its exact spelling and the sources as a list of ids. What can be read is kept even when
    the format fails (a key in another case, text around the object); a repeated key is read as missing
    however often it repeats; the first problem is named."""
    report = parse_report(table_payload()["format"], text)
    assert (dict(report.values), report.well_formed, report.problem) == (values, not problem, problem)


def test_a_json_report_object_spans_from_its_first_brace_to_its_last() -> None:
    """Nested objects stay inside the report: the object runs from the first { to the last }."""
    report = parse_report(table_payload()["format"], '{"total": 4000.5, "owner": {"name": "Dina Ruiz"}}')
    assert (report.values["figure"], report.well_formed) == (4000.5, True)


@pytest.mark.parametrize(
    ("style", "text", "values", "problem"),
    [
        ("colon", "FIGURE: 118000\n\nAPPROVER: Bob Stone", {"figure": "118000", "person": "Bob Stone"}, ""),
        ("colon", "FIGURE:1", {"figure": "1"}, ""),
        ("equals", "FIGURE = 1\nAPPROVER = Bob", {"figure": "1", "person": "Bob"}, ""),
        ("colon", "note: hi\nFIGURE: 1", {"figure": "1"}, "unexpected line 'note: hi'"),
        (
            "colon",
            "A line much longer than forty characters, surely",
            {},
            "unexpected line 'A line much longer than forty characters'",
        ),
        ("colon", "XFIGURE: 1\nAPPROVER: Bob", {"person": "Bob"}, "unexpected line 'XFIGURE: 1'"),
        (
            "colon",
            "- **FIGURE**: 1\n> APPROVER: Bob",
            {"figure": "1", "person": "Bob"},
            "line '- **FIGURE**: 1' is not 'LABEL: value' with a required label",
        ),
        (
            "colon",
            "Approved on: 2024-07-03",
            {"date": "2024-07-03"},
            "line 'Approved on: 2024-07-03' is not 'LABEL: value' with a required label",
        ),
        (
            "colon",
            "figure: 1",
            {"figure": "1"},
            "line 'figure: 1' is not 'LABEL: value' with a required label",
        ),
        (
            "colon",
            "approver: Someone With A Very Long Name Indeed",
            {"person": "Someone With A Very Long Name Indeed"},
            "line 'approver: Someone With A Very Long Name ' is not 'LABEL: value' with a required label",
        ),
        (
            "equals",
            "FIGURE: 1",
            {"figure": "1"},
            "line 'FIGURE: 1' is not 'LABEL= value' with a required label",
        ),
        (
            "colon",
            "FIGURE: 1\nFIGURE: 2\nFIGURE: 3\nAPPROVER: Bob",
            {"person": "Bob"},
            "duplicate field FIGURE",
        ),
        ("colon", "", {}, "no required field found"),
    ],
)
def test_a_line_report_reads_leniently_and_judges_the_format_strictly(
    style: str, text: str, values: dict[str, Any], problem: str
) -> None:
    """A colon or equals report is 'LABEL: value' (or 'LABEL = value') lines with the exact labels; blank
    lines are fine. Content is read leniently (list and quote markers, bold, another case, spaces for
    underscores, the other separator), but each such line, an unexpected line (quoted to 40 characters)
    or a repeated field (read as missing) fails the format; later lines are still read."""
    report = parse_report({**lookup_payload()["format"], "style": style}, text)
    assert (dict(report.values), report.well_formed, report.problem) == (values, not problem, problem)


DESKS = """TABLE TABLE-900: Desks by floor
Budget cap: EUR 9,000

floor,site,desks
Floor 3,Lisbon,12

Floor 4,Lisbon,30
"""


@pytest.mark.parametrize(
    ("calc", "calc_value"),
    [
        ({"op": "sum", "column": "desks"}, 4200),
        ({"op": "filter", "filters": {"site": "Lisbon"}}, None),
        (None, None),
    ],
)
def test_a_table_grounds_its_header_numbers_numeric_cells_and_the_questions_result(
    calc: dict[str, Any] | None, calc_value: int | None
) -> None:
    """A table source grounds the numbers of its header lines, its numeric cells (not a number inside a
    text cell such as 'Floor 3'; the header ends at the first blank line) and, for a calculation other
    than a row filter, the calculation's result (in cents). A memo grounds the numbers of its text and no
    calculation."""
    payload = {
        "sources": [_src("TABLE-900", "table", DESKS), _src("MEMO-101", "memo", MEMO)],
        **({"calc": calc} if calc else {}),
    }
    index = build_index(payload)
    table = index.sources["TABLE-900"]
    assert table.numbers == {900000, 1200, 3000}
    assert table.calc_value == calc_value
    memo = index.sources["MEMO-101"]
    assert memo.numbers == {202400, 12050000} and memo.calc_value is None  # 2024 (of "Q3 2024"), 120,500
    assert index.order == ("TABLE-900", "MEMO-101")


def test_bm25_ranks_matching_documents_first() -> None:
    docs = [
        ("a", "Porto office travel budget for Q3 2024"),
        ("b", "Lisbon office travel budget for Q3 2024, approved"),
        ("c", "Parking at the Lisbon office"),
    ]
    ranking = bm25_ranking("approved Q3 2024 travel budget of the Lisbon office", docs)
    assert ranking[0] == "b" and set(ranking) == {"a", "b", "c"}
    assert bm25_ranking("nothing matches", docs) == ["a", "b", "c"]


def test_bm25_uses_k1_1_5_b_0_75_and_robertsons_idf() -> None:
    """Okapi BM25 with k1 = 1.5, b = 0.75 and idf log(1 + (N - df + 0.5) / (df + 0.5)): on these four
    documents another saturation, length normalisation or idf smoothing gives another order; the
    highest score comes first whatever k1. No documents, no ranking."""
    docs = [
        ("a", "travel travel budget memo lisbon lisbon"),
        ("b", "memo budget office travel budget"),
        ("c", "memo memo budget lisbon office lisbon"),
        ("d", "office lisbon travel budget"),
    ]
    assert bm25_ranking("travel budget", docs) == ["a", "d", "b", "c"]
    assert bm25_ranking("travel budget", docs, k1=0.5) == ["a", "d", "b", "c"]  # higher scores first
    assert bm25_ranking("travel budget", []) == []


def test_observable_check_uses_only_what_was_opened_never_the_gold() -> None:
    payload = lookup_payload()
    index = build_index(payload)
    report = colon()
    unopened = observable_check(payload, index, report, [], [])
    assert not unopened.items["citations"] and not unopened.items["figure_grounded"]
    assert any("never opened" in issue for issue in unopened.issues)
    opened = observable_check(payload, index, report, ["MEMO-101", "EMAIL-202"], [])
    assert all(opened.items.values()) and not opened.issues
    wrong = observable_check(payload, index, colon(figure="99,000"), ["MEMO-101", "EMAIL-202"], [])
    assert not wrong.items["figure_grounded"] and wrong.items["citations"]
    missing = observable_check(payload, index, colon(drop="APPROVER"), ["MEMO-101", "EMAIL-202"], [])
    assert not missing.items["fields"] and any("APPROVER" in issue for issue in missing.issues)
    tool = observable_check(
        table_payload(),
        build_index(table_payload()),
        '{"total": 4000.5, "owner": "Dina Ruiz", "as_of": "2024-10-05", "citations": ["TABLE-303"]}',
        ["TABLE-303"],
        ["table_calc TABLE-303: sum(amount_eur) = 4,000.50 (3 row(s))"],
    )
    assert tool.items["figure_grounded"]
    scrambled = copy.deepcopy(payload)
    scrambled["gold"] = {"figure": 1, "person": "X", "date": "1999-01-01", "sources": [], "superseded": None}
    for text in (report, colon(figure="99,000"), "garbage"):
        assert observable_check(scrambled, index, text, ["MEMO-101"], []) == observable_check(
            payload, index, text, ["MEMO-101"], []
        )


# ---- the shipped task set ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return gen.generate_records()


def test_regenerating_gives_the_shipped_file(records: list[dict[str, Any]], tmp_path) -> None:
    out = tmp_path / "kw.jsonl"
    write_jsonl(records, out)
    assert out.read_bytes() == gen.OUTPUT.read_bytes()
    assert [task.to_record() for task in read_jsonl(gen.OUTPUT)] == records
    other = tmp_path / "kw-hashseed.jsonl"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    cmd = [sys.executable, "-m", "harness_gym.domains.knowledge_work.generate", str(other)]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    assert other.read_bytes() == gen.OUTPUT.read_bytes()


def test_records_and_split(records: list[dict[str, Any]]) -> None:
    assert [r["task_id"] for r in records] == [f"knowledge_work-{i:03d}" for i in range(100)]
    assert {(r["domain"], r["version"]) for r in records} == {("knowledge_work", "v0")}
    assert Counter(r["difficulty"] for r in records) == {"easy": 20, "standard": 60, "hard": 20}
    assert Counter((r["difficulty"], r["split"]) for r in records if r["split"] == "eval") == {
        ("easy", "eval"): 4,
        ("standard", "eval"): 12,
        ("hard", "eval"): 4,
    }
    split_of: dict[str, set[str]] = {}
    for r in records:
        split_of.setdefault(r["template"], set()).add(r["split"])
    assert all(len(s) == 1 for s in split_of.values())
    for r in records:
        payload = r["payload"]
        assert payload["question"] in r["prompt"]
        assert all(src["id"] in r["prompt"] for src in payload["sources"])
        assert all(label in r["prompt"] for _, label in payload["format"]["fields"])
        assert (payload["gold"]["superseded"] is not None) == (r["difficulty"] == "hard")
        assert set(payload["gold"]["sources"]) <= {src["id"] for src in payload["sources"]}
        assert 4 <= len(payload["sources"]) <= 8


def test_every_reference_scores_one_and_every_pool_artifact_less(records: list[dict[str, Any]]) -> None:
    kinds: Counter[str] = Counter()
    for r in records:
        payload = r["payload"]
        index = build_index(payload)
        ref = artifact_scores(payload, payload["reference"], index)
        assert g_norm(ref.rubric) == 1.0 and ref.claim_support == 1.0, r["task_id"]
        assert set(ref.rubric) == set(criteria_for(payload))
        pool = payload["pool"]
        assert POOL_MIN <= len(pool) <= POOL_MAX
        sources = [item["source"] for item in pool]
        assert len(set(sources)) == len(sources) and payload["reference"] not in sources
        for item in pool:
            kinds[item["flaw"]] += 1
            scores = artifact_scores(payload, item["source"], index).rubric
            assert g_norm(scores) < 1.0, (r["task_id"], item)
            assert _flaw_shows(item["flaw"], scores), (r["task_id"], item, scores)
    assert set(kinds) == FLAWS


def _flaw_shows(flaw: str, scores: dict[str, tuple[float, float]]) -> bool:
    """The rubric loses points where the flaw label says it should."""
    if flaw in ("outdated_value", "distractor_value", "wrong_aggregation"):
        return frac(scores, "answer_correctness") == 0.0
    if flaw == "malformed":
        return frac(scores, "output_format") == 0.0
    if flaw == "missing_field":
        return frac(scores, "output_format") == 0.0 and frac(scores, "answer_correctness") == 1.0
    if flaw == "missing_citation":
        return frac(scores, "answer_correctness") == 1.0 and frac(scores, "criterion_coverage") < 1.0
    if flaw == "wrong_person":
        return frac(scores, "answer_correctness") == 1.0 and frac(scores, "criterion_coverage") < 1.0
    return False


def _family_entities(record: dict[str, Any]) -> set[str]:
    payload = record["payload"]
    return {payload["company"], *payload["offices"], *payload["people"], record["template"].split("/")[1]}


def test_entities_and_formats_differ_between_families_and_splits(records: list[dict[str, Any]]) -> None:
    owner: dict[str, str] = {}
    for r in records:
        for name in _family_entities(r):
            assert owner.setdefault(name, r["template"]) == r["template"], name
    by_split: dict[str, set[str]] = {"train": set(), "eval": set()}
    formats: dict[str, set[tuple]] = {"train": set(), "eval": set()}
    for r in records:
        by_split[r["split"]] |= _family_entities(r)
        fmt = r["payload"]["format"]
        formats[r["split"]].add((fmt["style"], tuple(label for _, label in fmt["fields"])))
    assert not by_split["train"] & by_split["eval"]
    assert not formats["train"] & formats["eval"]
    assert len({sig for sigs in formats.values() for sig in sigs}) == len(gen.FAMILIES)
    for r in records:  # the entities named in the texts are the family's own
        text = " ".join(src["text"] for src in r["payload"]["sources"])
        assert r["payload"]["company"] in r["prompt"] and r["payload"]["office"] in text


# ---- the environment -------------------------------------------------------------------------------


def _play(env: HarnessKnowledgeWorkEnv, seed: int, script: list[Action], task_id: str | None = None):
    obs, info = env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
    steps = []
    for action in script:
        if action == Action.RETRIEVE and not info["action_mask"][Action.RETRIEVE]:
            continue
        obs, _, terminated, truncated, info = env.step(int(action))
        steps.append(obs)
        if terminated or truncated:
            return info, steps
    raise AssertionError("script did not end the episode")


def test_check_env_and_random_legal_play() -> None:
    check_env(HarnessKnowledgeWorkEnv(), skip_render_check=True)
    env = HarnessKnowledgeWorkEnv(split="all")
    for seed in range(50):
        _, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, reward, terminated, truncated, info = env.step(action)
            assert 0.0 <= reward <= 1.0
            if terminated or truncated:
                assert reward == info["G"]
                task = env._by_id[info["task_id"]]
                assert set(info["rubric"]) == set(criteria_for(task.payload)) | {"grounding"}
                break


def test_retrieve_follows_bm25_and_masks_at_the_cap() -> None:
    env = HarnessKnowledgeWorkEnv(split="all")
    domain = env.domain
    for task in env.tasks[::9]:
        _, info = env.reset(seed=0, options={"task_id": task.task_id})
        ranking = domain.task_info(task).ranking
        opened = []
        while info["action_mask"][Action.RETRIEVE]:
            _, _, _, _, info = env.step(int(Action.RETRIEVE))
            opened.append(info.get("evidence") or env._ep.context.evidence[-1])
        assert opened == list(ranking[: min(RETRIEVE_CAP, len(ranking))])
        assert len(set(opened)) == len(opened)


def test_table_tool_is_invalid_before_a_table_is_open_and_computes_after() -> None:
    env = HarnessKnowledgeWorkEnv(split="all")
    domain = env.domain
    computed = 0
    for task in env.tasks:
        _, info = env.reset(seed=0, options={"task_id": task.task_id})
        assert info["action_mask"][Action.CALL_TOOL]
        env.step(int(Action.CALL_TOOL))
        assert env._ep.steps[-1]["tool"] == {"name": "table_calc", "valid": False, "ok": False}
        while info["action_mask"][Action.RETRIEVE]:
            _, _, _, _, info = env.step(int(Action.RETRIEVE))
        before = domain.informedness(task, env._ep.context)
        env.step(int(Action.CALL_TOOL))
        record = env._ep.steps[-1]
        assert record["tool"]["valid"] and record["text"].startswith("table_calc ")
        assert env._ep.context.tool_results[-1] == record["text"]
        gold = task.payload["gold"]
        tables = [s for s in gold["sources"] if s.startswith("TABLE")]
        if task.payload["calc"]["op"] == "filter" or tables[0] not in env._ep.context.evidence:
            continue
        computed += 1
        assert f"{tables[0]}: {task.payload['calc']['op']}(" in record["text"]
        assert f"= {format_figure(gold['figure'])} (" in record["text"]
        assert record["tool"]["ok"]
        assert domain.informedness(task, env._ep.context) > before
    assert computed >= 40


def test_nothing_drafted_scores_zero_on_the_tasks_criteria() -> None:
    env = HarnessKnowledgeWorkEnv(split="all", max_steps=2)
    for task in (env.tasks[0], next(t for t in env.tasks if t.difficulty == "hard")):
        info, _ = _play(env, 0, [Action.OBSERVE, Action.CALL_TOOL], task.task_id)
        assert info["G"] == 0.0 and info["termination_reason"] == "budget"
        tops = {**criteria_for(task.payload), "grounding": GROUNDING_WEIGHT}
        assert info["rubric"] == {k: (0.0, v) for k, v in tops.items()}


def test_observation_after_draft_does_not_reveal_correctness() -> None:
    env = HarnessKnowledgeWorkEnv(split="all")
    task = env.tasks[40]
    reference = task.payload["reference"]
    seen: dict[bool, np.ndarray] = {}
    for seed in range(60):
        env.reset(seed=seed, options={"task_id": task.task_id})
        for action in (Action.OBSERVE, Action.RETRIEVE):
            env.step(int(action))
        obs, *_ = env.step(int(Action.DRAFT))
        correct = env._ep.draft == reference
        if correct in seen:
            assert np.array_equal(seen[correct], obs)
        seen[correct] = obs
    assert set(seen) == {True, False}
    assert np.array_equal(seen[True], seen[False])


def _correct_fraction(
    env: HarnessKnowledgeWorkEnv, script: list[Action], episodes: int
) -> tuple[float, float]:
    gs = [_play(env, seed, script)[0]["G"] for seed in range(episodes)]
    return float(np.mean([g == 1.0 for g in gs])), float(np.mean(gs))


def test_gathering_evidence_and_computing_raises_draft_quality() -> None:
    env = HarnessKnowledgeWorkEnv(split="all")
    blind = _correct_fraction(env, [Action.DRAFT, Action.SUBMIT], 400)
    gather = [
        Action.OBSERVE,
        *[Action.RETRIEVE] * RETRIEVE_CAP,
        Action.CALL_TOOL,
        Action.DRAFT,
        Action.SUBMIT,
    ]
    informed = _correct_fraction(env, gather, 400)
    assert informed[0] > blind[0] + 0.25, (blind, informed)
    assert informed[1] > blind[1] + 0.15, (blind, informed)
    domain = env.domain
    ctx_inf = []
    for task in env.tasks:
        ctx = type(env._ep.context)(
            observed=True, evidence=list(domain.task_info(task).ranking[:RETRIEVE_CAP])
        )
        ctx_inf.append(domain.informedness(task, ctx))
    assert np.mean(ctx_inf) > 0.6


def test_revise_after_an_informative_check_fixes_more_flawed_drafts() -> None:
    env = HarnessKnowledgeWorkEnv(split="all", executor_profile=one_localised_rate(KnowledgeWorkDomain))

    def fixed_fraction(script: list[Action]) -> float:
        fixed = flawed = 0
        for seed in range(700):
            _, info = env.reset(seed=seed)
            gather_all(env)
            env.step(int(Action.DRAFT))
            if env._ep.draft == env._ep.task.payload["reference"]:
                continue
            flawed += 1
            for action in script:
                _, _, terminated, _, info = env.step(int(action))
            assert terminated
            fixed += info["G"] == 1.0
        assert flawed > 250
        return fixed / flawed

    informed = fixed_fraction([Action.CHECK, Action.REVISE, Action.SUBMIT])
    blind = fixed_fraction([Action.REVISE, Action.SUBMIT])
    # with everything gathered the checks name about 40% of the flaws (a wrong figure or person that an
    # opened source contradicts); the rest get the judge's bare verdict, no better than a blind retry
    assert informed > blind + 0.1, (informed, blind)


def test_base_harness_is_calibrated_and_never_checks() -> None:
    class Base:
        def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
            return KnowledgeWorkDomain.base_action(obs, mask)

    finals = run_protocol(HarnessKnowledgeWorkEnv(split="eval"), Base(), EVAL_SEEDS, EVAL_ROLLOUTS)
    summary = summarize(finals)
    assert len(finals) == 180
    assert summary["G"] == pytest.approx(BASE_G["HarnessKnowledgeWork-v0"], abs=CALIBRATION_TOLERANCE)
    assert summary["events"]["CheckBeforeSubmit"]["fired"] == 0.0
    actions = {step["action"] for f in finals for step in f["trajectory"]["steps"]}
    assert actions == {"OBSERVE", "RETRIEVE", "DRAFT", "SUBMIT"}


_OPENED = ["MEMO-101", "EMAIL-202"]
_ALL_ITEMS = ("format", "fields", "figure_grounded", "claims_grounded", "citations")
_CHECK_COMPONENTS = {
    "format:": "format",
    "missing required field(s)": "missing_field",
    "FIGURE: no single number": "figure_missing",
    "FIGURE ": "figure_ungrounded",
    "not found in any opened source": "person_or_date_ungrounded",
    "no source cited": "no_citation",
    "cites unknown source(s)": "unknown_citation",
    "cites source(s) never opened": "cites_unopened",
    "CONFLICT: name the superseded": "conflict_field_padded",
    "cites 3 sources": "too_many_citations",
}
"""The component each CHECK finding is tagged with, by the start of its text (first match)."""


def _check_component(text: str) -> str:
    return next(component for start, component in _CHECK_COMPONENTS.items() if text.startswith(start))


@pytest.mark.parametrize(
    ("text", "opened", "tools", "failed", "issues"),
    [
        (
            colon(),
            [],
            [],
            {"figure_grounded", "claims_grounded", "citations"},
            [
                "FIGURE 118,000 appears in no opened source or tool output",
                "not found in any opened source: APPROVER, APPROVED_ON",
                "cites source(s) never opened: MEMO-101, EMAIL-202",
            ],
        ),
        (
            colon(figure="99,000"),
            _OPENED,
            [],
            {"figure_grounded"},
            ["FIGURE 99,000 appears in no opened source or tool output"],
        ),
        (colon(figure="99,000"), _OPENED, ["calc: 99,000"], set(), []),
        (
            colon(drop="APPROVER"),
            _OPENED,
            [],
            {"fields", "claims_grounded"},
            ["missing required field(s): APPROVER"],
        ),
        (
            colon(figure="84,500 or 213,000"),
            _OPENED,
            [],
            {"figure_grounded"},
            ["FIGURE: no single number given"],
        ),
        (
            colon(person="Zed Quill", day="2024-01-01"),
            _OPENED,
            [],
            {"claims_grounded"},
            ["not found in any opened source: APPROVER, APPROVED_ON"],
        ),
        (
            colon(day="2024-01-01"),
            _OPENED,
            [],
            {"claims_grounded"},
            ["not found in any opened source: APPROVED_ON"],
        ),
        (
            colon(sources=""),
            _OPENED,
            [],
            {"fields", "citations"},
            ["missing required field(s): SOURCES", "no source cited"],
        ),
        (
            colon(sources="MEMO-101, MEMO-999"),
            _OPENED,
            [],
            {"citations"},
            ["cites unknown source(s): MEMO-999"],
        ),
        (
            colon(sources="MEMO-998, MEMO-999"),
            _OPENED,
            [],
            {"citations"},
            ["cites unknown source(s): MEMO-998, MEMO-999"],
        ),
        (
            colon(sources="MEMO-101, EMAIL-202, MEMO-404"),
            [*_OPENED, "MEMO-404"],
            [],
            {"citations"},
            ["cites 3 sources; cite only the sources the answer rests on (at most 2)"],
        ),
        (colon(conflict="MEMO-101, EMAIL-202 and MEMO-404"), _OPENED, [], set(), []),
        (
            colon(conflict="MEMO-101 EMAIL-202 MEMO-404 TABLE-303"),
            _OPENED,
            [],
            set(),
            ["CONFLICT: name the superseded source and figure and what replaces them"],
        ),
        (colon(conflict="120,500 became 118,000"), _OPENED, [], set(), []),
        (
            colon(conflict="1, 2 or 3"),
            _OPENED,
            [],
            set(),
            ["CONFLICT: name the superseded source and figure and what replaces them"],
        ),
        (
            "just some prose",
            _OPENED,
            [],
            set(_ALL_ITEMS),
            [
                "format: unexpected line 'just some prose'",
                "missing required field(s): FIGURE, APPROVER, APPROVED_ON, CONFLICT, SOURCES",
                "FIGURE: no single number given",
                "no source cited",
            ],
        ),
    ],
)
def test_observable_check_items_and_findings_in_words(
    text: str, opened: list[str], tools: list[str], failed: set[str], issues: list[str]
) -> None:
    """The CHECK's items and findings, exactly: the figure (one number, found in an opened source or a
    tool output), the person and date (found in an opened source), the citations (some, known, opened,
    at most two) and a padded conflict field (more than three ids or two numbers); each finding tagged
    with its component."""
    payload = lookup_payload()
    report = observable_check(payload, build_index(payload), text, opened, tools)
    assert report.items == {item: item not in failed for item in _ALL_ITEMS}
    assert [str(i) for i in report.issues] == issues
    assert [i.component for i in report.issues] == [_check_component(i) for i in issues]


@pytest.mark.parametrize(
    ("conflict", "noted"),
    [
        ("MEMO-101", True),
        ("120,500", True),
        ("MEMO-101 (EUR 120,500) is superseded by EMAIL-202 (EUR 118,000)", True),
        ("EMAIL-202", False),
        ("118,000", False),
        ("MEMO-101 and MEMO-404", False),
        ("MEMO-101 said 120,500, MEMO-404 says 99,000", False),
        ("120,500 or 99,000", False),
        ("none.", False),
        ("No conflict", False),
    ],
)
def test_notes_conflict_names_the_superseded_source_or_figure_and_nothing_else(
    conflict: str, noted: bool
) -> None:
    """The conflict field notes the conflict when it names the superseded source (MEMO-101) or its figure
    (120,500); naming only what replaces them (EMAIL-202, 118,000) is not enough, and naming any source
    or figure outside the conflict (MEMO-404, 99,000) voids it, as does a 'none' word."""
    payload = lookup_payload()
    _, claims, _ = read_report(payload["format"], colon(conflict=conflict))
    assert notes_conflict(claims, payload["gold"]) is noted


def test_support_fraction_counts_each_claim_against_the_given_sources() -> None:
    """Each claimed field (figure, person, date) counts once, supported when one of the given sources
    holds it: MEMO-101 holds the approver and the date but only the superseded figure, EMAIL-202 all
    three. The unsupported fields are named in order. With no claim the fraction is 0, nothing unsupported."""
    payload = lookup_payload()
    index = build_index(payload)
    claims = read_report(payload["format"], colon())[1]
    assert support_fraction(index, claims, ["MEMO-101"]) == (pytest.approx(2 / 3), ["figure"])
    assert support_fraction(index, claims, ["EMAIL-202"]) == (1.0, [])
    stranger = read_report(payload["format"], colon(person="Zed Quill"))[1]
    assert support_fraction(index, stranger, ["MEMO-101"]) == (pytest.approx(1 / 3), ["figure", "person"])
    wrong_day = read_report(payload["format"], colon(person="Zed Quill", day="2024-01-01"))[1]
    assert support_fraction(index, wrong_day, ["MEMO-101"]) == (0.0, ["figure", "person", "date"])
    nothing = read_report(payload["format"], colon(figure="", person="", day=""))[1]
    assert support_fraction(index, nothing, ["MEMO-101"]) == (0.0, [])


def test_field_presence_lists_null_and_a_missing_conflict() -> None:
    """A field reading 'null' (any case) is missing; a list of citations is present unless empty; a
    conflict field that is no text reads as no conflict noted."""
    payload, table = lookup_payload(), table_payload()
    assert read_report(payload["format"], colon(person="null"))[2] == ("APPROVER",)
    assert read_report(payload["format"], colon(person="NULL "))[2] == ("APPROVER",)
    answer = {"total": "4000.50", "owner": "Dina Ruiz", "as_of": "2024-10-05", "citations": ["TABLE-303"]}
    assert read_report(table["format"], json.dumps(answer))[2] == ()
    assert read_report(table["format"], json.dumps({**answer, "citations": []}))[2] == ("citations",)
    fmt = {**table["format"], "fields": [*table["format"]["fields"], ["conflict", "conflict"]]}
    assert read_report(fmt, json.dumps({**answer, "conflict": None}))[1].conflict == ""


def test_padding_citations_costs_evidence_and_empty_sources_keep_the_format() -> None:
    """Citing one source beyond the task's two takes one of three supported claims off the evidence
    score (2/3); an empty sources field costs the evidence score but not the format, which asks only for
    the answer fields."""
    padded = rubric(lookup_payload(), colon(sources="MEMO-101, EMAIL-202, MEMO-404"))
    assert padded["evidence_support"] == (pytest.approx(2 / 3), 1.0)
    bare = rubric(lookup_payload(), colon(sources=""))
    assert bare["evidence_support"] == (0.0, 1.0) and bare["output_format"] == (1.0, 1.0)


# ---- MDP v2: the knowledge_work-v1 task set and the cost of opened distractors -------------------------


def test_the_mdp2_task_set_regenerates_and_keeps_the_v0_structure(records, tmp_path) -> None:
    out = tmp_path / "knowledge_work-v1.jsonl"
    assert gen_mdp2.main([str(out)]) == 0
    shipped = gen_mdp2.OUTPUT
    assert shipped.name == f"knowledge_work-{MDP2_VERSION}.jsonl" and out.read_bytes() == shipped.read_bytes()
    v1 = [task.to_record() for task in read_jsonl(shipped)]
    assert {r["version"] for r in v1} == {MDP2_VERSION}
    same = ("task_id", "difficulty", "split", "template")
    assert [tuple(r[k] for k in same) for r in v1] == [tuple(r[k] for k in same) for r in records]
    assert sum(a["prompt"] != b["prompt"] for a, b in zip(v1, records, strict=True)) >= 95
    # the mix the generator's docstring states: 20 one-source and 80 two-source tasks, 20 with a correction
    assert Counter(len(r["payload"]["gold"]["sources"]) for r in v1) == {1: 20, 2: 80}
    assert sum("if sources disagree" in r["prompt"] for r in v1) == 20


def test_mdp2_plays_the_v1_tasks_and_mdp1_the_v0_tasks() -> None:
    v2 = HarnessKnowledgeWorkEnv(split="all", obs_layout="v2")
    v1 = HarnessKnowledgeWorkEnv(split="all")
    assert {t.version for t in v2.tasks} == {MDP2_VERSION} and {t.version for t in v1.tasks} == {"v0"}


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_opened_distractors_cost_informedness_in_mdp2_only(layout: str) -> None:
    """Each opened source that is not a gold one takes ``NOISE_COST`` off informedness on the MDP v2
    tasks (down to 0) and nothing on the paper's."""
    env = HarnessKnowledgeWorkEnv(split="all", obs_layout=layout)
    domain = env.domain
    for task in env.tasks:
        env.reset(seed=0, options={"task_id": task.task_id})
        context = env._ep.context
        gold = list(task.payload["gold"]["sources"])
        others = [src["id"] for src in task.payload["sources"] if src["id"] not in gold]
        context.evidence = gold
        clean = domain.informedness(task, context)
        assert clean == len(gold) / (len(gold) + (task.payload["calc"]["op"] != "filter"))
        for n in (1, 2):
            context.evidence = gold + others[:n]
            cost = NOISE_COST * n if layout == "v2" else 0.0
            assert domain.informedness(task, context) == pytest.approx(max(0.0, clean - cost))


def test_opened_distractors_lower_first_drafts_in_mdp2() -> None:
    """Over many draws the first report after opening two more sources than the one a look-up needs
    (ranked first) is right less often, by about ``informed_gain * 2 * NOISE_COST``."""
    env = HarnessKnowledgeWorkEnv(split="train", obs_layout="v2")
    domain = env.domain
    tasks = [
        t
        for t in env.tasks
        if t.payload["calc"]["op"] == "filter"
        and len(t.payload["gold"]["sources"]) == 1
        and domain.task_info(t).ranking[0] in t.payload["gold"]["sources"]
    ]
    assert len(tasks) >= 4
    right = {}
    for opened in (1, 3):
        hits = []
        for task in tasks:
            for seed in range(60):
                env.reset(seed=seed, options={"task_id": task.task_id})
                for action in (Action.OBSERVE, *[Action.RETRIEVE] * opened, Action.DRAFT):
                    env.step(int(action))
                hits.append(env._ep.draft == domain.pool(task).reference)
        right[opened] = float(np.mean(hits))
    assert DRAFT_PARAMS.informed_gain * 2 * NOISE_COST == pytest.approx(0.2)
    assert 0.12 < right[1] - right[3] < 0.28, right
