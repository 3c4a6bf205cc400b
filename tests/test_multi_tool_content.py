"""Multi-tool content: tools, verifier, the shipped ``multi_tool-v0`` task set and env semantics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from upstream import one_localised_rate

from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_INDEX
from harness_gym.core.task import read_jsonl, write_jsonl
from harness_gym.domains.generation import MDP2_VERSION, POOL_MAX, POOL_MIN
from harness_gym.domains.multi_tool import (
    DRAFT_PARAMS,
    NOISE_COST,
    HarnessMultiToolEnv,
    MultiToolDomain,
)
from harness_gym.domains.multi_tool import generate as gen
from harness_gym.domains.multi_tool import generate_mdp2 as gen_mdp2
from harness_gym.domains.multi_tool.tools import (
    RunError,
    Seen,
    ToolError,
    canonical_call,
    completed,
    convert_value,
    evaluate,
    names_in_context,
    parse_call,
    read_result,
    run_call,
    step_done,
)
from harness_gym.domains.multi_tool.verifier import (
    CRITERIA,
    AnswerSpec,
    artifact_scores,
    claim_support,
    parse_artifact,
    score,
    tool_use_score,
)
from harness_gym.executors.base import ExecutorResponse

TOP = sum(CRITERIA.values())
CHAIN_LENGTH = {"easy": 2, "standard": 3, "hard": 4}


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return gen.generate_records()


def perfect_calls(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": step["tool"], "valid": True, "ok": True} for step in payload["chain"]]


def gold_results(payload: dict[str, Any]) -> list[Seen]:
    """The results of running the task's gold chain, in order."""
    docs, seen = payload["documents"], []
    for step in payload["chain"]:
        seen.append(read_result(run_call(docs, step["call"], names_in_context(docs, seen)).text))
    return seen


# ---- the shipped task set ----------------------------------------------------------------------------


def test_regenerating_gives_the_shipped_file(records, tmp_path) -> None:
    out = tmp_path / "multi_tool.jsonl"
    write_jsonl(records, out)
    shipped = gen.OUTPUT
    assert out.read_bytes() == shipped.read_bytes()
    assert [task.to_record() for task in read_jsonl(shipped)] == records
    other = tmp_path / "other-seed.jsonl"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    code = "import sys; from harness_gym.domains.multi_tool import generate; generate.main([sys.argv[1]])"
    subprocess.run([sys.executable, "-c", code, str(other)], check=True, env=env, capture_output=True)
    assert other.read_bytes() == shipped.read_bytes()


def test_ids_difficulties_splits_and_chains(records) -> None:
    assert [r["task_id"] for r in records] == [f"multi_tool-{i:03d}" for i in range(100)]
    assert {(r["domain"], r["version"]) for r in records} == {("multi_tool", "v0")}
    assert Counter(r["difficulty"] for r in records) == {"easy": 20, "standard": 60, "hard": 20}
    evals = Counter(r["difficulty"] for r in records if r["split"] == "eval")
    assert evals == {"easy": 4, "standard": 12, "hard": 4}
    splits_of: dict[str, set[str]] = {}
    for r in records:
        splits_of.setdefault(r["template"], set()).add(r["split"])
        chain = [step["tool"] for step in r["payload"]["chain"]]
        assert len(chain) == CHAIN_LENGTH[r["difficulty"]]
        assert chain == r["payload"]["answer"]["tools"]
        assert f"Required tool chain: {' -> '.join(chain)}" in r["prompt"]
        docs = r["payload"]["documents"]
        assert all(f"- {d['id']}: {d['title']}" in r["prompt"] for d in docs)
        if r["difficulty"] == "hard":  # a superseded table beside the current one, and an older report
            target = next(d for d in docs if len(d["tables"]) == 2)
            assert "superseded" in target["text"]
            assert sum(d["title"].split(" ")[0] == target["title"].split(" ")[0] for d in docs) >= 2
    assert all(len(s) == 1 for s in splits_of.values())


def test_every_reference_scores_full_and_every_flawed_draft_loses(records) -> None:
    kinds: Counter[str] = Counter()
    for r in records:
        payload = r["payload"]
        calls, results = perfect_calls(payload), gold_results(payload)
        rubric = score(payload, payload["reference"], calls, results)
        assert sum(s for s, _ in rubric.values()) == TOP, r["task_id"]
        sources = [item["source"] for item in payload["pool"]]
        assert POOL_MIN <= len(sources) <= POOL_MAX
        assert len(set(sources)) == len(sources) and payload["reference"] not in sources
        for item in payload["pool"]:
            kinds[item["flaw"]] += 1
            rubric = score(payload, item["source"], calls, results)
            assert sum(s for s, _ in rubric.values()) < TOP, (r["task_id"], item)
            numeric_ok = rubric["numeric_answer"][0] == CRITERIA["numeric_answer"]
            assert numeric_ok == (item["flaw"] == "malformed"), (r["task_id"], item)
            if item["flaw"] == "missing_conversion":
                assert "convert" in payload["answer"]["tools"]
    assert set(kinds) == set(gen.DRAFT_FLAWS)


def test_gold_chains_run_and_candidates_behave_as_labelled(records) -> None:
    kinds: Counter[str] = Counter()
    for r in records:
        docs, chain = r["payload"]["documents"], r["payload"]["chain"]
        seen: list[Seen] = []
        for k, step in enumerate(chain):
            assert completed(chain, seen) == [True] * k + [False] * (len(chain) - k)
            names = names_in_context(docs, seen)
            for cand in step["candidates"]:
                kinds[cand["flaw"]] += 1
                result = run_call(docs, cand["source"], names)
                if cand["flaw"] in gen.INVALID_CALL_FLAWS:
                    assert not result.valid and result.error, cand
                elif cand["flaw"] in gen.VALID_CALL_FLAWS:
                    assert result.valid and result.ok, (cand, result.text)
                got = read_result(result.text)
                assert not (got.ok and step_done(step, got.tool, got.value)), cand
            result = run_call(docs, step["call"], names)
            assert result.valid and result.ok, result.text
            seen.append(read_result(result.text))
        assert all(completed(chain, seen))
        final = seen[-1]
        assert float(final.value.split(" ")[0]) == pytest.approx(r["payload"]["answer"]["value"], rel=1e-6)
    assert set(kinds) == gen.INVALID_CALL_FLAWS | gen.VALID_CALL_FLAWS | gen.EITHER_CALL_FLAWS


def _family_entities(record: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for doc in record["payload"]["documents"]:
        out.add(doc["id"].split("-")[0])
        out.add(doc["title"].split(" ")[0])
        for table in doc["tables"]:
            for row in table["rows"]:
                out.add(row[0].split("-")[0])
                out.add(row[1])
    return out


def _units(record: dict[str, Any]) -> set[str]:
    payload = record["payload"]
    spec = AnswerSpec.from_payload(payload)
    out = {payload["answer"]["unit"]}
    for doc in payload["documents"]:
        out |= {c["unit"] for t in doc["tables"] for c in t["columns"] if "unit" in c}
    for item in payload["pool"]:
        unit = parse_artifact(spec, item["source"]).unit
        if unit:
            out.add(unit)
    for step in payload["chain"]:
        for text in [step["call"]] + [c["source"] for c in step["candidates"]]:
            try:
                tool, args = parse_call(text)
            except ToolError:
                continue
            if tool == "convert":
                out |= {u for u in (args["from_unit"], args["to_unit"]) if u in gen.UNIT_WORDS}
    return out


def test_entities_units_and_formats_differ_between_families_and_splits(records) -> None:
    owner: dict[str, str] = {}
    for r in records:
        for name in _family_entities(r):
            assert owner.setdefault(name, r["template"]) == r["template"], name
    by_split: dict[str, dict[str, set]] = {"train": {}, "eval": {}}
    for r in records:
        answer = r["payload"]["answer"]
        slot = by_split[r["split"]]
        slot.setdefault("units", set()).update(_units(r))
        slot.setdefault("formats", set()).add((answer["label"], answer["decimals"], answer["unit_first"]))
        slot.setdefault("labels", set()).add(answer["label"])
        slot.setdefault("entities", set()).update(_family_entities(r))
        slot.setdefault("templates", set()).add(r["template"])
    for key in ("units", "formats", "labels", "entities", "templates"):
        assert not by_split["train"][key] & by_split["eval"][key], key
    per_family = Counter((r["payload"]["answer"]["label"], r["payload"]["answer"]["decimals"],
                          r["payload"]["answer"]["unit_first"], r["template"]) for r in records)  # fmt: skip
    assert len({key[:3] for key in per_family}) == len({key[3] for key in per_family})


# ---- tools ---------------------------------------------------------------------------------------------

DOCS = [
    {
        "id": "D-1",
        "title": "Test report",
        "text": "Weights in lb.",
        "tables": [
            {
                "name": "t1",
                "caption": "test",
                "columns": [
                    {"name": "id"},
                    {"name": "city"},
                    {"name": "weight_lb", "unit": "lb", "decimals": 1},
                    {"name": "count", "decimals": 0},
                ],
                "rows": [["A-1", "Lyon", 10.5, 3], ["A-2", "Porto", 20.0, 4]],
            },
            {
                "name": "t2",
                "caption": "other",
                "columns": [{"name": "id"}, {"name": "weight_lb", "unit": "lb", "decimals": 1}],
                "rows": [["B-1", 99.0]],
            },
        ],
    }
]


def call(tool: str, **args: Any) -> str:
    return canonical_call(tool, args)


@pytest.mark.parametrize(
    ("expression", "value"),
    [("1 + 2 * 3", 7.0), ("(1 + 2) * 3", 9.0), ("2 ** 3 - -1", 9.0), ("7 / 2", 3.5), ("+4.5", 4.5)],
)
def test_calculator_evaluates_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("__import__('os').system('true')", "function calls"),
        ("(1).real", "Attribute"),
        ("sum([1, 2])", "function calls"),
        ("'a' * 3", "only numbers"),
        ("True + 1", "only numbers"),
        ("1 if 2 else 3", "IfExp"),
        ("[x for x in (1,)]", "ListComp"),
        ("lambda: 1", "Lambda"),
        ("5 // 2", "FloorDiv"),
        ("1,234 + 2", "Tuple"),
        ("1 +", "malformed expression"),
        ("3 x 4", "malformed expression"),
        ("", "empty"),
        ("1 + " * 200 + "1", "longer than"),
        ("weight_lb_1 + 1", "unknown name"),
    ],
)
def test_calculator_refuses_everything_else(expression: str, needle: str) -> None:
    with pytest.raises(ToolError, match=needle):
        evaluate(expression)


def test_calculator_names_and_run_errors() -> None:
    assert evaluate("w_1 * 2 + w_2", {"w_1": 1.5, "w_2": 1.0}) == 4.0
    with pytest.raises(RunError, match="division by zero"):
        evaluate("1 / (2 - 2)")
    with pytest.raises(RunError, match="power too large"):
        evaluate("10 ** 100")
    result = run_call(DOCS, call("calculator", expression="1 / 0"))
    assert result.valid and not result.ok and "division by zero" in result.text


def test_convert_rates_and_refusals() -> None:
    assert convert_value(1.0, "lb", "kg") == pytest.approx(0.45359237)
    assert convert_value(100.0, "EUR", "usd") == pytest.approx(108.0)
    assert convert_value(1.0, "nmi", "m") == pytest.approx(1852.0)
    assert convert_value(3.6, "MJ", "kWh") == pytest.approx(1.0)
    with pytest.raises(ToolError, match="unsupported unit 'dollars'"):
        convert_value(1.0, "EUR", "dollars")
    with pytest.raises(ToolError, match="cannot convert kg"):
        convert_value(1.0, "kg", "USD")
    bad = run_call(DOCS, call("convert", value="12 EUR", from_unit="EUR", to_unit="USD"))
    assert not bad.valid and "JSON number" in (bad.error or "")
    ok = run_call(DOCS, call("convert", value=10, from_unit="EUR", to_unit="usd"))
    assert ok.ok and read_result(ok.text) == Seen("convert", True, "10.8 USD")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('read_document(doc="D-1")', "could not parse"),
        ('{"tool": "read_document"}', "exactly the keys"),
        ('{"tool": "browse", "args": {}}', "unknown tool 'browse'"),
        ('{"tool": "read_document", "args": {}}', "missing argument(s) doc"),
        ('{"tool": "read_document", "args": {"doc": "D-1", "page": 2}}', "unknown argument(s) page"),
        (call("read_document", doc="D-9"), "unknown document 'D-9'"),
        (call("extract_table", doc="D-1", table="t9"), "unknown table 't9' in D-1; tables: t1, t2"),
        (
            call("extract_table", doc="D-1", table="t1", columns=["weight_kg"]),
            "unknown column(s) 'weight_kg'",
        ),
        (call("extract_table", doc="D-1", table="t1", columns=[]), "non-empty list"),
    ],
)
def test_invalid_calls_are_refused_with_a_clear_error(text: str, needle: str) -> None:
    result = run_call(DOCS, text)
    assert not result.valid and not result.ok
    assert needle in (result.error or ""), result.error
    assert read_result(result.text).ok is False


def test_extraction_binds_names_and_reads_back() -> None:
    read = run_call(DOCS, call("read_document", doc="D-1"))
    assert read.ok and "t1: test; columns id, city, weight_lb (lb), count; 2 rows" in read.text
    assert "10.5" not in read.text  # values need extract_table
    result = run_call(DOCS, call("extract_table", doc="D-1", table="t1"))
    assert result.ok and "1 | A-1 | Lyon | 10.5 | 3" in result.text
    seen = read_result(result.text)
    assert seen == Seen("extract_table", True, "D-1/t1 columns=id,city,weight_lb,count rows=2")
    names = names_in_context(DOCS, [seen])
    assert names == {"weight_lb_1": 10.5, "weight_lb_2": 20.0, "count_1": 3.0, "count_2": 4.0}
    calc = run_call(DOCS, call("calculator", expression="weight_lb_1 * count_1 + weight_lb_2"), names)
    assert read_result(calc.text) == Seen("calculator", True, "51.5")
    rebound = names_in_context(
        DOCS, [seen, read_result(run_call(DOCS, call("extract_table", doc="D-1", table="t2")).text)]
    )
    assert rebound["weight_lb_1"] == 99.0 and rebound["weight_lb_2"] == 20.0


def test_progress_follows_values_and_rebinding() -> None:
    chain = [
        {"tool": "extract_table", "match": {"doc": "D-1", "table": "t1", "columns": ["id", "weight_lb"]}},
        {"tool": "calculator", "match": {"value": 30.5}},
        {"tool": "convert", "match": {"value": 13.83457, "unit": "kg"}},
    ]
    gold = Seen("extract_table", True, "D-1/t1 columns=id,city,weight_lb,count rows=2")
    other = Seen("extract_table", True, "D-1/t2 columns=id,weight_lb rows=1")
    narrow = Seen("extract_table", True, "D-1/t1 columns=id,city rows=2")
    assert completed(chain, [narrow]) == [False, False, False]
    assert completed(chain, [gold]) == [True, False, False]
    assert completed(chain, [gold, other]) == [False, False, False]  # the names now hold t2's values
    assert completed(chain, [other, gold]) == [True, False, False]
    assert completed(chain, [gold, Seen("calculator", True, "30.50000001")]) == [True, True, False]
    assert completed(chain, [gold, Seen("calculator", False, "")]) == [True, False, False]
    assert completed(chain, [Seen("convert", True, "13.83457 lb")]) == [False, False, False]
    assert completed(chain, [Seen("convert", True, "13.83457 kg")]) == [False, False, True]


# ---- verifier -------------------------------------------------------------------------------------------

SPEC = {"label": "TOTAL", "decimals": 2, "unit_first": False, "unit": "USD", "value": 1234.5678}
TOOLS = ["extract_table", "calculator", "convert"]
PAYLOAD = {"answer": {**SPEC, "tools": TOOLS}}
TOOLS_LINE = "TOOLS: extract_table, calculator, convert"


@pytest.mark.parametrize(
    ("artifact", "numeric", "fmt"),
    [
        (f"TOTAL: 1234.57 USD\n{TOOLS_LINE}", 3.0, 1.0),
        (f"TOTAL: 1235.70 USD\n{TOOLS_LINE}", 3.0, 1.0),  # within relative 1e-3
        (f"TOTAL: 1236.00 USD\n{TOOLS_LINE}", 0.0, 1.0),  # outside it
        (f"TOTAL: 1234.57 EUR\n{TOOLS_LINE}", 0.0, 2 / 3),  # wrong unit
        (f"TOTAL: 1143.12 USD\n{TOOLS_LINE}", 0.0, 1.0),  # unconverted value under the right unit
        (f"TOTAL: 1234.568 USD\n{TOOLS_LINE}", 3.0, 2 / 3),  # decimals
        (f"TOTAL: USD 1234.57\n{TOOLS_LINE}", 3.0, 2 / 3),  # unit placement
        (f"TOTAL: 1,234.57 USD\n{TOOLS_LINE}", 3.0, 2 / 3),  # thousands separator
        ("TOTAL: 1234.57 USD", 3.0, 1 / 3),  # no TOOLS line
        ("TOTAL: 1234.57 USD\nTOOLS: calculator, convert", 3.0, 2 / 3),  # chain incomplete
        ("TOTAL: 1234.57 USD\nTOOLS: extract_table, abacus, calculator, convert", 3.0, 2 / 3),
        (f"Here you go.\nTOTAL: 1234.57 USD\n{TOOLS_LINE}", 3.0, 2 / 3),  # extra text
        (f"total: 1234.57 USD\n{TOOLS_LINE}", 3.0, 1 / 3),
        (f"TOTAL: about twelve hundred dollars\n{TOOLS_LINE}", 0.0, 2 / 3),
        ("", 0.0, 0.0),
    ],
)
def test_verifier_scores_hand_built_artifacts(artifact: str, numeric: float, fmt: float) -> None:
    scores = artifact_scores(PAYLOAD, artifact)
    assert scores["numeric_answer"] == (numeric, 3.0)
    assert scores["format"][0] == pytest.approx(fmt)


def test_unit_first_formats_and_rounding_tolerance() -> None:
    payload = {
        "answer": {**PAYLOAD["answer"], "unit_first": True, "decimals": 1, "unit": "kg", "value": 52.06}
    }
    assert artifact_scores(payload, f"TOTAL: kg 52.1\n{TOOLS_LINE}") == {
        "numeric_answer": (3.0, 3.0),
        "format": (1.0, 1.0),
    }
    # tolerance: max(1e-3 * 52.06, 0.51 * 0.1) = 0.052
    assert artifact_scores(payload, f"TOTAL: kg 52.0\n{TOOLS_LINE}")["numeric_answer"] == (0.0, 3.0)
    assert artifact_scores(payload, f"TOTAL: kg 52.10\n{TOOLS_LINE}")["numeric_answer"] == (3.0, 3.0)
    assert artifact_scores(payload, f"TOTAL: kg 52.2\n{TOOLS_LINE}")["numeric_answer"] == (0.0, 3.0)
    assert artifact_scores(payload, f"TOTAL: KG 52.1\n{TOOLS_LINE}")["numeric_answer"] == (3.0, 3.0)
    assert artifact_scores(payload, f"TOTAL: KG 52.1\n{TOOLS_LINE}")["format"][0] == pytest.approx(2 / 3)


def test_tool_use_reads_the_episode_calls() -> None:
    def calls(*spec: tuple[str, bool, bool]) -> list[dict[str, Any]]:
        return [{"name": n, "valid": v, "ok": o} for n, v, o in spec]

    assert tool_use_score([], [False, False, False]) == 0.0
    full = calls(("extract_table", True, True), ("calculator", True, True), ("convert", True, True))
    assert tool_use_score(full, [True, True, True]) == 1.0
    with_bad = [*full, {"name": "convert", "valid": False, "ok": False}]
    assert tool_use_score(with_bad, [True, True, True]) == pytest.approx(0.5 * 0.75 + 0.5)
    partial = calls(("extract_table", True, True), ("calculator", True, False))
    assert tool_use_score(partial, [True, False, False]) == pytest.approx(0.5 + 0.5 / 3)
    # the required tools run on the wrong inputs accomplish no step: validity is not paid either
    assert tool_use_score(full, [False, False, False]) == 0.0
    payload = {**PAYLOAD, "chain": [{"tool": "calculator", "match": {"value": 1234.5678}}]}
    hit, miss = Seen("calculator", True, "1234.5678"), Seen("calculator", True, "2")
    rubric = score(payload, f"TOTAL: 1234.57 USD\n{TOOLS_LINE}", calls(("calculator", True, True)), [hit])
    assert list(rubric) == list(CRITERIA) and rubric["tool_use"][0] == 1.0
    assert score(payload, "TOTAL: 1234.57 USD", calls(("calculator", True, True)), [miss])["tool_use"][0] == 0


def test_tool_use_without_a_gold_chain_counts_progress_as_complete() -> None:
    """With no gold step to accomplish, progress is 1: half the credit, plus half the fraction of valid
    calls (one of two valid: 0.5 + 0.25)."""
    calls = [
        {"name": "calculator", "valid": True, "ok": True},
        {"name": "convert", "valid": False, "ok": False},
    ]
    assert tool_use_score(calls, []) == 0.75


def test_a_difference_of_exactly_the_tolerance_still_counts() -> None:
    """At a reference of 2000 the tolerance is 2 (relative 1e-3, wider than two decimals' 0.0051): an
    answer exactly 2 away earns the number, and a tool output exactly 2 away from the answer backs it; a
    hundredth further does neither."""
    payload = {"answer": {**PAYLOAD["answer"], "value": 2000.0}}
    for answer, earned in (("2002.00", 3.0), ("1998.00", 3.0), ("2002.01", 0.0)):
        scores = artifact_scores(payload, f"TOTAL: {answer} USD\n{TOOLS_LINE}")
        assert scores["numeric_answer"] == (earned, 3.0), answer
    spec = AnswerSpec.from_payload(payload)
    parsed = parse_artifact(spec, "TOTAL: 2000.00 USD\nTOOLS: calculator")
    assert claim_support(spec, parsed, [Seen("calculator", True, "2002")]) == 1.0
    assert claim_support(spec, parsed, [Seen("calculator", True, "2002.01")]) == 0.5  # the tool ran


def test_the_answer_is_read_outside_the_tools_line_with_the_unit_on_either_side() -> None:
    """The stated answer is the one number with a unit beside it (before or after, even first on its
    line) on any line but a TOOLS line (in any case, wherever it stands); with no TOOLS line no tools
    are listed."""
    spec = AnswerSpec.from_payload(PAYLOAD)
    for text in (
        "TOTAL: 1234.57 USD\nTOOLS: convert 3 EUR",
        "Tools: convert 3 EUR\nTOTAL: 1234.57 USD",
        "USD 1234.57",
    ):
        parsed = parse_artifact(spec, text)
        assert (parsed.number, parsed.unit) == (1234.57, "USD"), text
    assert parse_artifact(spec, "TOTAL: 1234.57 USD").tools_listed == ()


def test_claim_support_counts_backed_claims() -> None:
    spec = AnswerSpec.from_payload(PAYLOAD)
    parsed = parse_artifact(spec, f"TOTAL: 1234.57 USD\n{TOOLS_LINE}")
    chain = [
        Seen("extract_table", True, "D-1/t1 columns=a rows=2"),
        Seen("calculator", True, "1143.118333"),
        Seen("convert", True, "1234.5678 USD"),
    ]
    assert claim_support(spec, parsed, chain) == 1.0
    assert claim_support(spec, parsed, chain[:2]) == pytest.approx(2 / 4)  # number and convert unbacked
    assert claim_support(spec, parsed, [*chain[:2], Seen("convert", True, "1234.5678 EUR")]) == 0.75
    assert claim_support(spec, parse_artifact(spec, "no answer"), chain) == 0.0


# ---- the environment ------------------------------------------------------------------------------------


class Scripted:
    """An executor that picks the gold next call (or a given one) and drafts a given text."""

    name = "scripted"

    def __init__(self, domain: MultiToolDomain, draft: str | None = None, call: str | None = None) -> None:
        self.domain, self.draft, self.call = domain, draft, call

    def complete(self, request, rng) -> ExecutorResponse:
        if request.kind == "tool":
            text = self.call or self.domain.tool_pool(request.task, request.context).reference
        elif request.kind == "judge":
            text = "PASS"
        elif request.kind == "revise":
            text = self.domain.pool(request.task).reference
        else:
            text = self.draft if self.draft is not None else self.domain.pool(request.task).reference
        return ExecutorResponse(text=text)


def scripted_env(**kwargs: Any) -> HarnessMultiToolEnv:
    env = HarnessMultiToolEnv(split="all", executor="simulated")
    env.executor = Scripted(env.domain, **kwargs)
    return env


def hard_task(env: HarnessMultiToolEnv) -> str:
    return next(t.task_id for t in env.tasks if t.difficulty == "hard")


def test_gold_calls_advance_the_chain_and_informedness() -> None:
    env = scripted_env()
    env.reset(seed=0, options={"task_id": hard_task(env)})
    ep = env._ep
    chain = ep.task.payload["chain"]
    for k, step in enumerate(chain):
        assert env.domain.informedness(ep.task, ep.context) == k / len(chain)
        assert env.domain.tool_pool(ep.task, ep.context).reference == step["call"]
        _, _, _, _, info = env.step(Action.CALL_TOOL)
        record = ep.steps[-1]
        assert record["tool"] == {"name": step["tool"], "valid": True, "ok": True}
        assert record["evidence"] == [f"tool:{k}:{step['tool']}"] and not record["failure"]
    assert env.domain.informedness(ep.task, ep.context) == 1.0
    assert env.domain.tool_pool(ep.task, ep.context).reference == chain[-1]["call"]
    # what the domain keeps on the context follows the results: a context given other results is re-read
    kept = ep.context.tool_results
    ep.context.tool_results = kept[:1]
    assert env.domain.informedness(ep.task, ep.context) == 1 / len(chain)
    ep.context.tool_results = kept
    env.step(Action.DRAFT)
    _, _, _, _, info = env.step(Action.CHECK)
    assert ep.steps[-1]["check"] == {"coverage": 1.0, "missing": 0.0} and "issues" not in ep.steps[-1]
    _, reward, terminated, _, info = env.step(Action.SUBMIT)
    assert terminated and reward == 1.0
    assert info["hms"]["EvidenceBeforeClaim"]["fired"] and info["hms"]["ValidToolUse"]["fired"]
    assert info["hms"]["CheckBeforeSubmit"]["fired"] and info["hms"]["StopWhenSufficient"]["fired"]
    assert info["trajectory"]["signals"]["claim_support"] == 1.0


def test_invalid_call_is_a_visible_failure() -> None:
    env = scripted_env(call='{"tool": "extract_table", "args": {"doc": "NOPE-1", "table": "x"}}')
    obs, _ = env.reset(seed=0)
    obs, _, _, _, info = env.step(Action.CALL_TOOL)
    record = env._ep.steps[-1]
    assert record["tool"] == {"name": "extract_table", "valid": False, "ok": False}
    assert record["failure"] and "unknown document 'NOPE-1'" in record["issues"][0]
    assert "evidence" not in record
    assert obs[FEATURE_INDEX["errors"]] > 0 and obs[FEATURE_INDEX["last_tool_ok"]] == 0.0
    assert obs[FEATURE_INDEX["unresolved_failure"]] == 1.0
    assert env._ep.context.tool_results[-1].startswith("extract_table -> error: unknown document")
    env.step(Action.DRAFT)
    _, _, _, _, info = env.step(Action.SUBMIT)
    assert not info["hms"]["ValidToolUse"]["fired"] and info["hms"]["RevisionAfterFailure"]["applicable"]
    assert info["rubric"]["tool_use"] == (0.0, 1.0)


def test_check_reports_observable_problems_only() -> None:
    env = scripted_env()
    task_id = hard_task(env)
    env.reset(seed=0, options={"task_id": task_id})
    task = env._ep.task
    wrong_unit = next(i["source"] for i in task.payload["pool"] if i["flaw"] == "wrong_unit")
    env.executor = env._ep.executor = Scripted(env.domain, draft=wrong_unit)  # swap mid-episode
    env.step(Action.DRAFT)  # no tools yet
    env.step(Action.CHECK)
    issues = env._ep.steps[-1]["issues"]
    assert [i.split(":")[0] for i in issues] == ["format", "unit", "consistency", "tools"]
    assert env._ep.steps[-1]["check"]["coverage"] == pytest.approx(0.2)
    assert env._ep.feedback is not None and env._ep.feedback.localizes(env._ep.draft_hash)
    env.step(Action.REVISE)  # informed: the scripted executor fixes it
    for _ in task.payload["chain"]:
        env.step(Action.CALL_TOOL)
    env.step(Action.CHECK)
    assert env._ep.steps[-1]["check"]["coverage"] == 1.0


def _run(env: HarnessMultiToolEnv, actions: list[Any], seed: int) -> tuple[bool, dict[str, Any]]:
    env.reset(seed=seed)
    ep = env._ep
    first = None
    info: dict[str, Any] = {}
    for action in actions:
        if action == "TOOLS":  # call tools until the chain is complete (at most six calls)
            for _ in range(6):
                if env.domain.informedness(ep.task, ep.context) == 1.0:
                    break
                env.step(Action.CALL_TOOL)
            continue
        _, _, terminated, truncated, info = env.step(action)
        if action == Action.DRAFT:
            first = ep.draft == env.domain.pool(ep.task).reference
        if terminated or truncated:
            break
    return bool(first), info


def test_running_the_tools_makes_drafts_better() -> None:
    env = HarnessMultiToolEnv(split="all")
    blind = [_run(env, [Action.OBSERVE, Action.DRAFT, Action.SUBMIT], s) for s in range(400)]
    tools = [_run(env, [Action.OBSERVE, "TOOLS", Action.DRAFT, Action.SUBMIT], s) for s in range(400)]
    blind_right, tools_right = np.mean([f for f, _ in blind]), np.mean([f for f, _ in tools])
    assert tools_right > blind_right + 0.4
    assert np.mean([i["G"] for _, i in tools]) > np.mean([i["G"] for _, i in blind]) + 0.3


def test_revise_after_informative_check_fixes_more_than_blind_revise() -> None:
    # what is tested is the check's information, so both flaw classes get one localised rate, well
    # above the blind one (the shipped rates differ by class: harness_gym.executors.profiles)
    env = HarnessMultiToolEnv(split="all", executor_profile=one_localised_rate(MultiToolDomain))
    # the chain runs first: a check then compares the answer with the tool outputs, which names the
    # flaw (without tool output it can only say that no tool ran, which names no flaw of the answer)
    seq_checked = ["TOOLS", Action.DRAFT, Action.CHECK, Action.REVISE, Action.SUBMIT]
    seq_blind = ["TOOLS", Action.DRAFT, Action.REVISE, Action.SUBMIT]

    def fixed(seq: list[Any]) -> float:
        runs = [_run(env, seq, s) for s in range(1200)]
        flawed = [info for first, info in runs if not first]
        assert len(flawed) > 300
        return float(np.mean([info["rubric"]["numeric_answer"][0] == 3.0 for info in flawed]))

    checked, blind = fixed(seq_checked), fixed(seq_blind)
    assert checked > blind + 0.3


def test_observation_holds_no_gold_information() -> None:
    env = HarnessMultiToolEnv(split="all")
    task_id = env.tasks[0].task_id
    outcomes: dict[bool, np.ndarray] = {}
    for seed in range(60):
        env.reset(seed=seed, options={"task_id": task_id})
        env.step(Action.OBSERVE)
        obs, *_ = env.step(Action.DRAFT)
        outcomes.setdefault(env._ep.draft == env.domain.pool(env._ep.task).reference, obs)
        if len(outcomes) == 2:
            break
    assert len(outcomes) == 2
    assert np.array_equal(outcomes[True], outcomes[False])


def test_check_env_and_random_legal_actions() -> None:
    env = HarnessMultiToolEnv()
    check_env(env, skip_render_check=True)
    rng = np.random.default_rng(0)
    for seed in range(50):
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            assert 0.0 <= reward <= 1.0
        assert 0.0 <= info["G"] <= 1.0 and -1.0 <= info["hms_norm"] <= 1.0


def test_base_script_and_masks() -> None:
    env = HarnessMultiToolEnv(split="eval")
    obs, info = env.reset(seed=0)
    assert info["action_mask"][Action.RETRIEVE] == 0 and info["action_mask"][Action.CALL_TOOL] == 1
    actions = []
    while True:
        action = MultiToolDomain.base_action(obs, info["action_mask"])
        actions.append(Action(action).name)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert actions == ["OBSERVE", "CALL_TOOL", "DRAFT", "SUBMIT"]


def _result(
    tool: str, value: str, args: dict[str, Any] | None = None, body: str = "", ok: bool = True
) -> str:
    head = f"{tool} -> ok: {value}" if ok else f"{tool} -> error: {value}"
    call = json.dumps({"tool": tool, "args": args or {}})
    return f"{head}\ncall: {call}" + (f"\n{body}" if body else "")


def test_unconnected_names_each_required_tool_that_never_used_an_earlier_output() -> None:
    """A calculator call is connected by a bound name or a literal equal to an extracted value; a convert
    call by a value equal (to a millionth) to a calculator output, or to an extracted value when the chain
    has no calculator; failed calls and unreadable or missing call lines connect nothing; only required
    tools are named, in chain order."""
    from harness_gym.domains.multi_tool.verifier import unconnected

    table = _result("extract_table", "d1/t columns=kg rows=2", {"doc": "d1"}, body="| 12.5 |\n| 40 |")
    calc = _result("calculator", "52.5", {"expression": "12.5 + 40"})
    conv = _result("convert", "115.7 lb", {"value": 52.5, "from_unit": "kg", "to_unit": "lb"})
    both = ["calculator", "convert"]
    assert unconnected(both, [table, calc, conv]) == []
    assert unconnected(both, [calc, conv]) == ["calculator"]  # nothing extracted before
    assert unconnected(["convert"], [table, calc, conv]) == ["convert"]  # 52.5 was not extracted
    named = _result("calculator", "25", {"expression": "kg_1 * 2"})
    assert unconnected(["calculator"], [named]) == []
    trivial = _result("calculator", "2", {"expression": "1 + 1"})
    assert unconnected(both, [table, trivial, conv]) == both  # 52.5 is no calculator output here
    failed = _result("calculator", "division by zero", {"expression": "12.5 / 0"}, ok=False)
    assert unconnected(["calculator"], [table, failed]) == ["calculator"]
    near = _result("calculator", "12.5", {"expression": "12.5000001 + 0"})
    assert unconnected(["calculator"], [table, near]) == ["calculator"]  # literals must equal a value
    for value, connected in ((40.00001, True), (40.001, False), ("40", False)):
        c = _result("convert", "88.2 lb", {"value": value, "from_unit": "kg", "to_unit": "lb"})
        assert unconnected(["convert"], [table, c]) == ([] if connected else ["convert"]), value
    broken = "calculator -> ok: 52.5\ncall: {not json"
    assert unconnected(["calculator"], [table, broken]) == ["calculator"]
    listed = "calculator -> ok: 52.5\ncall: " + json.dumps({"tool": "calculator", "args": ["12.5"]})
    assert unconnected(["calculator"], [table, listed]) == ["calculator"]
    callless = "calculator -> ok: 52.5"  # a result without its call line
    assert unconnected(["calculator"], [table, callless]) == ["calculator"]
    headless = "extract_table -> ok: d1/t columns=kg rows=2\ncall: {}"  # no rows body
    assert unconnected(["calculator"], [headless, calc]) == ["calculator"]
    assert unconnected(["convert", "calculator"], [table]) == ["calculator", "convert"]
    assert unconnected([], [table]) == []


def test_unconnected_reads_every_extraction_and_every_row() -> None:
    """Extracted values accumulate over the episode and a failed call in between does not end the
    reading; every row of a table body counts (the first of two, a body of one row), and a thousands
    separator is ignored in a cell and in a calculator literal alike."""
    from harness_gym.domains.multi_tool.verifier import unconnected

    one_row = _result("extract_table", "d1/u columns=kg rows=1", {"doc": "d1"}, body="| 1,250.5 |")
    two_rows = _result("extract_table", "d1/t columns=kg rows=2", {"doc": "d1"}, body="| 12.5 |\n| 40 |")
    first_row = _result("calculator", "25", {"expression": "12.5 * 2"})
    assert unconnected(["calculator"], [two_rows, first_row]) == []
    failed = _result("calculator", "division by zero", {"expression": "12.5 / 0"}, ok=False)
    assert unconnected(["calculator"], [two_rows, failed, first_row]) == []
    earlier = _result("calculator", "2501", {"expression": "1250.5 * 2"})
    assert unconnected(["calculator"], [one_row, earlier]) == []
    assert unconnected(["calculator"], [one_row, two_rows, earlier]) == []
    separated = _result("calculator", "2501", {"expression": "1,250.5 * 2"})  # as the text reads
    assert unconnected(["calculator"], [one_row, separated]) == []


def test_unconnected_matches_closer_than_a_billionth_and_within_a_millionth() -> None:
    """A calculator literal connects only when closer than 1e-9 to an extracted value (exactly 1e-9
    away does not); a convert value connects within a millionth of its source, inclusive, the millionth
    absolute for sources under 1 in size (from an extracted 0: 1e-6 connects, 1.5e-6 does not)."""
    from harness_gym.domains.multi_tool.verifier import unconnected

    zero = _result("extract_table", "d1/z columns=kg rows=1", {"doc": "d1"}, body="| 0 |")
    tiny = _result("calculator", "7.000000001", {"expression": "0.000000001 + 7"})
    assert unconnected(["calculator"], [zero, tiny]) == ["calculator"]
    for value, connected in ((0.000001, True), (0.0000015, False)):
        conv = _result("convert", "0 lb", {"value": value, "from_unit": "kg", "to_unit": "lb"})
        assert unconnected(["convert"], [zero, conv]) == ([] if connected else ["convert"]), value


# ---- MDP v2: the multi_tool-v1 task set and the cost of surplus tool results ---------------------------


def test_the_mdp2_task_set_regenerates_and_keeps_the_v0_structure(records, tmp_path) -> None:
    out = tmp_path / "multi_tool-v1.jsonl"
    assert gen_mdp2.main([str(out)]) == 0
    shipped = gen_mdp2.OUTPUT
    assert shipped.name == f"multi_tool-{MDP2_VERSION}.jsonl" and out.read_bytes() == shipped.read_bytes()
    v1 = [task.to_record() for task in read_jsonl(shipped)]
    assert {r["version"] for r in v1} == {MDP2_VERSION}
    # the same families, ids, difficulties, splits and chain lengths (2/3/4 tools: 20/60/20 tasks)...
    same = ("task_id", "difficulty", "split", "template")
    assert [tuple(r[k] for k in same) for r in v1] == [tuple(r[k] for k in same) for r in records]
    assert Counter(len(r["payload"]["chain"]) for r in v1) == {2: 20, 3: 60, 4: 20}
    # ... drawn apart: other tables, figures and prompts
    assert sum(a["prompt"] != b["prompt"] for a, b in zip(v1, records, strict=True)) >= 95


def test_mdp2_plays_the_v1_tasks_and_mdp1_the_v0_tasks() -> None:
    import gymnasium as gym

    v2 = gym.make("HarnessMultiTool-v0", obs_layout="v2", split="all").unwrapped
    v1 = gym.make("HarnessMultiTool-v0", split="all").unwrapped
    assert {t.version for t in v2.tasks} == {MDP2_VERSION} and {t.version for t in v1.tasks} == {"v0"}


@pytest.mark.parametrize("version", ["v0", MDP2_VERSION])
def test_surplus_tool_results_cost_informedness_in_mdp2_only(version: str) -> None:
    """Each tool result that accomplishes no gold step (here: calls after the chain is complete) takes
    ``NOISE_COST`` off informedness on the MDP v2 tasks and nothing on the paper's."""
    env = scripted_env()
    if version == MDP2_VERSION:
        env = HarnessMultiToolEnv(split="all", executor="simulated", obs_layout="v2")
        env.executor = Scripted(env.domain)
    task_id = next(t.task_id for t in env.tasks if len(t.payload["chain"]) == 2)
    env.reset(seed=0, options={"task_id": task_id})
    ep = env._ep
    assert ep.task.version == version
    for _ in range(2):
        env.step(Action.CALL_TOOL)
    assert env.domain.informedness(ep.task, ep.context) == 1.0
    for surplus in (1, 2, 3):
        env.step(Action.CALL_TOOL)
        cost = NOISE_COST * surplus if version == MDP2_VERSION else 0.0
        assert env.domain.informedness(ep.task, ep.context) == pytest.approx(1.0 - cost)


def test_surplus_tool_calls_lower_first_drafts_in_mdp2() -> None:
    """Over many draws the simulated executor's first draft after two surplus calls on a two-tool task is
    right less often, by about ``informed_gain * 2 * NOISE_COST``."""
    import gymnasium as gym

    env = gym.make("HarnessMultiTool-v0", obs_layout="v2", split="train").unwrapped
    tasks = [t.task_id for t in env.tasks if len(t.payload["chain"]) == 2]
    right = {}
    for calls in (2, 4):
        hits = []
        for task_id in tasks:
            for seed in range(40):
                env.reset(seed=seed, options={"task_id": task_id})
                for _ in range(calls):
                    env.step(Action.CALL_TOOL)
                env.step(Action.DRAFT)
                hits.append(env._ep.draft == env.domain.pool(env._ep.task).reference)
        right[calls] = float(np.mean(hits))
    drop = right[2] - right[4]
    assert DRAFT_PARAMS.informed_gain * 2 * NOISE_COST == pytest.approx(0.208)
    assert 0.13 < drop < 0.29, right


def test_the_answer_line_puts_the_unit_where_the_prompt_says() -> None:
    from harness_gym.domains.multi_tool.verifier import AnswerSpec

    after = AnswerSpec("Total", 2, False, "EUR", ("convert",), 12.5)
    before = AnswerSpec("Total", 2, True, "EUR", ("convert",), 12.5)
    assert after.line(12.5) == "Total: 12.50 EUR" and after.example() == "Total: <number> EUR"
    assert before.line(12.5) == "Total: EUR 12.50" and before.example() == "Total: EUR <number>"
