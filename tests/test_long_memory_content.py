"""Long-memory content: answer layouts and scoring, session search, the CHECK, and the shipped task set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from upstream import one_localised_rate

from harness_gym.core.actions import Action
from harness_gym.core.rubric import g_norm
from harness_gym.core.task import read_jsonl, write_jsonl
from harness_gym.domains.generation import POOL_MAX, POOL_MIN
from harness_gym.domains.long_memory import MAX_RETRIEVED, HarnessLongMemoryEnv, LongMemoryDomain
from harness_gym.domains.long_memory import generate as gen
from harness_gym.domains.long_memory.facts import (
    EVAL_KINDS,
    FILLER,
    KINDS,
    TRAIN_KINDS,
    stated_values,
)
from harness_gym.domains.long_memory.search import SessionIndex
from harness_gym.domains.long_memory.verifier import (
    CRITERIA,
    EVAL_FORMATS,
    FORMATS,
    TRAIN_FORMATS,
    artifact_scores,
    claim_support,
    contains_value,
    normalize,
    parse_answer,
    review,
)

TOP = sum(CRITERIA.values())


def total(scores: dict[str, tuple[float, float]]) -> float:
    return sum(score for score, _ in scores.values())


# ---- a hand-built history ---------------------------------------------------------------------------


def session(sid: str, date: str, *lines: str) -> dict[str, str]:
    return {"id": sid, "date": date, "text": "\n".join(lines)}


SESSIONS = [
    session("s01", "2023-01-02", "User: I live in Lisbon, so the trams are my lifeline.", "Assistant: Nice."),
    session(
        "s02", "2023-01-09", "User: My sister Ana just moved to Tallinn for a new job.", "Assistant: Great."
    ),
    session(
        "s03", "2023-01-20", "User: Big news: I moved from Lisbon to Galway last week!", "Assistant: Wow."
    ),
    session("s04", "2023-02-01", "User: The weather in Galway has been grey all week.", "Assistant: Oh no."),
    session("s05", "2023-02-10", "User: How do I fix a squeaky door hinge?", "Assistant: Oil it."),
]


def payload(form: str = "current", answer_format: str = "kv", **extra: Any) -> dict[str, Any]:
    answer, source = ("Galway", "s03") if form == "current" else ("Lisbon", "s01")
    base = {
        "fact_kind": "city",
        "question_form": form,
        "as_of": "2023-01-15" if form == "as_of" else None,
        "answer_format": answer_format,
        "sessions": SESSIONS,
        "answer": answer,
        "source": source,
        "question": "Which city does the user live in now?",
    }
    base.update(extra)
    return base


# ---- layouts and scoring ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_layout_round_trips_and_scores_the_maximum(name: str) -> None:
    fmt = FORMATS[name]
    text = fmt.render("Galway", "s03")
    parsed = parse_answer(text, name, tuple(s["id"] for s in SESSIONS))
    assert parsed == parse_answer(text, name, tuple(s["id"] for s in SESSIONS))
    assert (parsed.answer, parsed.sources, parsed.well_formed) == ("Galway", ("s03",), True)
    assert total(artifact_scores(payload(answer_format=name), text)) == TOP
    missing = artifact_scores(payload(answer_format=name), fmt.render_without_source("Galway"))
    assert missing == {
        "answer_correctness": (2.0, 2.0),
        "source_match": (0.0, 1.0),
        "output_format": (0.0, 0.5),
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ANSWER: Galway\nSOURCE: s03", (2.0, 1.0, 0.5)),
        ("  answer:  galway \nSOURCE: s03", (2.0, 1.0, 0.0)),  # key case is part of the layout
        ("ANSWER: the GALWAY.\nSOURCE: s03", (2.0, 1.0, 0.5)),  # case, articles, punctuation ignored
        ("ANSWER: Lisbon\nSOURCE: s01", (0.0, 0.0, 0.5)),  # outdated value
        ("ANSWER: Tallinn\nSOURCE: s02", (0.0, 0.0, 0.5)),  # another person's value
        ("ANSWER: Galway\nSOURCE: s04", (2.0, 0.0, 0.5)),  # a passing mention does not establish it
        ("ANSWER: Galway\nSOURCE: s03, s04", (2.0, 0.0, 0.5)),  # several sources: no source named
        ("ANSWER: Galway\nSOURCE: s09", (2.0, 0.0, 0.0)),  # no such session: not a valid layout
        ("ANSWER: Galway\nSOURCE: unknown", (2.0, 0.0, 0.0)),
        ("ANSWER: Galway", (2.0, 0.0, 0.0)),
        ("SOURCE: s03\nANSWER: Galway", (2.0, 1.0, 0.0)),  # fields recovered, layout wrong
        ('{"answer": "Galway", "source": "s03"}', (2.0, 1.0, 0.0)),  # another layout
        ("**Answer:** Galway\n**Source:** s03", (2.0, 1.0, 0.0)),
        ("The answer is Galway, according to session s03.", (0.0, 1.0, 0.0)),  # prose: no answer field
        ("", (0.0, 0.0, 0.0)),
        ("ANSWER: Galway or Lisbon\nSOURCE: s03", (0.0, 1.0, 0.5)),  # hedging is not an answer
    ],
)
def test_kv_scoring(text: str, expected: tuple[float, float, float]) -> None:
    scores = artifact_scores(payload(), text)
    assert tuple(score for score, _ in scores.values()) == expected
    assert {name: top for name, (_, top) in scores.items()} == CRITERIA


def test_strict_layouts_reject_near_misses() -> None:
    ids = tuple(s["id"] for s in SESSIONS)
    assert not parse_answer('{"answer": "Galway", "source": "s03", "note": "x"}', "json", ids).well_formed
    assert not parse_answer('{"answer": "Galway", "source": 3}', "json", ids).well_formed
    assert not parse_answer("Answer: Galway (s03)", "inline", ids).well_formed
    assert not parse_answer("FINAL ANSWER: Galway\nSOURCE: s03", "final", ids).well_formed
    assert not parse_answer("<answer>Galway</answer>", "tags", ids).well_formed
    assert not parse_answer("Galway | s03", "pipe", ids).well_formed
    assert parse_answer("Galway | s03", "pipe", ids).sources == ("s03",)
    assert parse_answer("<answer> Galway </answer>\n<source>s03</source>", "tags", ids).well_formed


def test_normalisation_and_containment() -> None:
    assert normalize("Tuesday at 10:30") == normalize("tuesday 10.30") == "tuesday 10 30"
    assert contains_value("Physio is now on Tuesday at 10:30 after the clinic called.", "Tuesday 10:30")
    assert not contains_value("Physio is on Tuesday at 10:35.", "Tuesday 10:30")
    assert not contains_value("I take the oat latte", "latte art")
    assert not contains_value("Galwayish", "Galway") and not contains_value("anything", "")


def test_claim_support_reads_the_cited_session() -> None:
    assert claim_support(payload(), "ANSWER: Galway\nSOURCE: s03") == 1.0
    assert claim_support(payload(), "ANSWER: Galway\nSOURCE: s04") == 1.0  # mentions it, wrong source
    assert claim_support(payload(), "ANSWER: Lisbon\nSOURCE: s03") == 1.0  # "moved from Lisbon"
    assert claim_support(payload(), "ANSWER: Galway\nSOURCE: s01") == 0.0
    assert claim_support(payload(), "ANSWER: Galway") == 0.0
    assert claim_support(payload(), "no answer at all, s03") == 0.0


@pytest.mark.parametrize(
    ("form", "answer", "source"),
    [("previous", "Lisbon", "s01"), ("as_of", "Lisbon", "s01")],
)
def test_past_value_questions_score_the_earlier_value(form: str, answer: str, source: str) -> None:
    p = payload(form)
    assert total(artifact_scores(p, f"ANSWER: {answer}\nSOURCE: {source}")) == TOP
    assert total(artifact_scores(p, "ANSWER: Galway\nSOURCE: s03")) == 0.5


# ---- statements, search and the CHECK --------------------------------------------------------------


def test_statements_are_read_from_user_lines_only() -> None:
    assert stated_values("city", SESSIONS[0]["text"]) == ("Lisbon",)
    assert stated_values("city", SESSIONS[2]["text"]) == ("Galway",)
    assert stated_values("city", SESSIONS[1]["text"]) == ()  # someone else's move
    assert stated_values("city", SESSIONS[3]["text"]) == ()  # a passing mention
    assert stated_values("city", "Assistant: I live in Oslo, so the trams are my lifeline.") == ()
    assert stated_values("employer", SESSIONS[0]["text"]) == ()


def test_review_items() -> None:
    p = payload()
    ok = review(p, "ANSWER: Galway\nSOURCE: s03", ["s01", "s03"])
    assert ok.passed == (True, True, True, True) and ok.issues == ()
    stale = review(p, "ANSWER: Lisbon\nSOURCE: s01", ["s01", "s03"])
    assert stale.passed == (True, True, True, False)
    assert any("s03" in issue and "'Galway'" in issue for issue in stale.issues)
    # The update was not retrieved: the stale answer looks consistent with what the harness has.
    assert review(p, "ANSWER: Lisbon\nSOURCE: s01", ["s01", "s02"]).passed == (True, True, True, True)
    unretrieved = review(p, "ANSWER: Galway\nSOURCE: s03", ["s01"])
    assert unretrieved.passed[1:3] == (False, False) and "not retrieved" in unretrieved.issues[0]
    mention = review(p, "ANSWER: Galway\nSOURCE: s04", ["s03", "s04"])
    assert mention.passed == (True, True, True, False)
    other = review(p, "ANSWER: Tallinn\nSOURCE: s02", ["s02"])
    assert other.passed == (True, True, True, True)  # no statement of the user's own was retrieved
    assert review(p, "ANSWER: Tallinn\nSOURCE: s02", ["s02", "s03"]).passed[3] is False
    broken = review(p, "Galway, s03", ["s03"])
    assert broken.passed == (False, True, False, False) and broken.issues
    assert review(payload("as_of"), "ANSWER: Lisbon\nSOURCE: s01", ["s01", "s03"]).passed[3] is True
    assert review(payload("previous"), "ANSWER: Galway\nSOURCE: s03", ["s01", "s03"]).passed[3] is False


def test_search_ranks_follows_feedback_and_never_repeats() -> None:
    index = SessionIndex(SESSIONS, "Which city does the user live in now?")
    first = index.next([])
    assert first[0] == "s01"  # "live" matches the introduction best
    seen: list[str] = []
    while batch := index.next(seen):
        assert 1 <= len(batch) <= 2 and not set(batch) & set(seen)
        seen += batch
    assert "s05" not in seen or seen.index("s05") >= 3
    assert index.next(seen) == ()
    assert index.next([]) is index.next([])  # memoised
    feedback = index.scores(["s01"])
    plain = index.scores([])
    assert feedback[2] > plain[2]  # "Lisbon" from s01 pulls in the move away from it
    assert SessionIndex(SESSIONS, "Quantum chromodynamics?").next([]) == ()


# ---- the shipped task set ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return gen.generate_records()


def test_regenerating_gives_the_shipped_file(records: list[dict[str, Any]], tmp_path) -> None:
    out = tmp_path / "lm.jsonl"
    write_jsonl(records, out)
    assert out.read_bytes() == gen.OUTPUT.read_bytes()
    assert [task.to_record() for task in read_jsonl(gen.OUTPUT)] == records
    other = tmp_path / "lm-hashseed.jsonl"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, "-m", "harness_gym.domains.long_memory.generate", str(other)], env=env, check=True
    )
    assert other.read_bytes() == gen.OUTPUT.read_bytes()


def _flaw_shows(flaw: str, p: dict[str, Any], text: str) -> bool:
    ids = tuple(s["id"] for s in p["sessions"])
    parsed = parse_answer(text, p["answer_format"], ids)
    answer = normalize(parsed.answer or "")
    right = answer == normalize(p["answer"])
    user_values = {normalize(t["value"]) for t in p["timeline"]}
    others = {normalize(o["value"]) for o in p["others"] + p["near_misses"]}
    if flaw == "outdated_value":
        return not right and answer in user_values
    if flaw == "distractor_value":
        return answer in others
    if flaw == "wrong_source":
        return right and parsed.well_formed and parsed.sources != (p["source"],)
    if flaw == "missing_source":
        return right and not parsed.sources
    if flaw == "malformed":
        return not parsed.well_formed and p["source"] in parsed.sources
    return False


def test_references_score_the_maximum_and_every_variant_less(records: list[dict[str, Any]]) -> None:
    kinds: Counter[str] = Counter()
    for record in records:
        p = record["payload"]
        assert total(artifact_scores(p, p["reference"])) == TOP
        assert claim_support(p, p["reference"]) == 1.0
        pool = p["pool"]
        assert POOL_MIN <= len(pool) <= POOL_MAX
        sources = [item["source"] for item in pool]
        assert len(set(sources)) == len(sources) and p["reference"] not in sources
        for item in pool:
            kinds[item["flaw"]] += 1
            assert total(artifact_scores(p, item["source"])) < TOP
            assert _flaw_shows(item["flaw"], p, item["source"]), (record["task_id"], item)
    assert set(kinds) == set(gen.FLAWS)


def test_histories_follow_their_difficulty(records: list[dict[str, Any]]) -> None:
    for record in records:
        p, difficulty = record["payload"], record["difficulty"]
        sessions = p["sessions"]
        shape = gen.SHAPES[difficulty]
        assert shape["sessions"][0] <= len(sessions) <= shape["sessions"][1]
        assert [s["id"] for s in sessions] == [f"s{i:02d}" for i in range(1, len(sessions) + 1)]
        dates = [s["date"] for s in sessions]
        assert dates == sorted(set(dates))
        assert shape["updates"][0] + 1 <= len(p["timeline"]) <= shape["updates"][1] + 1
        assert len(p["others"]) == shape["others"][0] and len(p["near_misses"]) == shape["near"][0]
        stating = {t["session"]: t["value"] for t in p["timeline"]}
        for s in sessions:  # only timeline sessions state the user's fact, each its own value
            expected = (stating[s["id"]],) if s["id"] in stating else ()
            assert stated_values(p["fact_kind"], s["text"]) == expected
        gold = p["gold_sessions"]
        assert (
            gold == [t["session"] for t in p["timeline"][: len(gold)]]
            and p["source"] == gold[-1 if p["question_form"] != "previous" else -2]
        )
        assert contains_value(sessions[int(p["source"][1:]) - 1]["text"], p["answer"])
        if p["question_form"] == "as_of":
            nxt = p["timeline"][len(gold)]["session"]
            assert dates[int(gold[-1][1:]) - 1] < p["as_of"] < dates[int(nxt[1:]) - 1]
        if difficulty == "hard":
            assert p["question_form"] != "current" or len(p["timeline"]) >= 3
        assert (
            p["question"] in record["prompt"] and FORMATS[p["answer_format"]].instruction in record["prompt"]
        )


def test_ids_templates_and_forms(records: list[dict[str, Any]]) -> None:
    assert [r["task_id"] for r in records] == [f"long_memory-{i:03d}" for i in range(100)]
    assert Counter(r["difficulty"] for r in records) == {"easy": 20, "standard": 60, "hard": 20}
    by_template = {r["template"]: (r["difficulty"], r["payload"]["question_form"]) for r in records}
    assert all(
        by_template[r["template"]] == (r["difficulty"], r["payload"]["question_form"]) for r in records
    )
    hard_forms = Counter(r["payload"]["question_form"] for r in records if r["difficulty"] == "hard")
    assert hard_forms["as_of"] + hard_forms["previous"] > hard_forms["current"]


def _content(record: dict[str, Any]) -> set[str]:
    """Everything in a task that names an entity: people, values, fact kind, layout, date style."""
    p = record["payload"]
    out = {f"kind:{p['fact_kind']}", f"format:{p['answer_format']}", f"dates:{p['date_style']}"}
    out |= {f"person:{o['person']}" for o in p["others"]}
    out |= {
        f"value:{normalize(item['value'])}"
        for key in ("timeline", "others", "near_misses")
        for item in p[key]
    }
    out.add(f"question:{p['question'] if p['as_of'] is None else p['question'].split(' ')[0]}")
    return out


def test_entities_kinds_and_formats_differ_between_splits(records: list[dict[str, Any]]) -> None:
    train = set().union(*(_content(r) for r in records if r["split"] == "train"))
    held_out = set().union(*(_content(r) for r in records if r["split"] == "eval"))
    shared = {item for item in train & held_out if not item.startswith("question:")}
    assert not shared
    assert {r["payload"]["fact_kind"] for r in records if r["split"] == "eval"} <= {
        k.name for k in EVAL_KINDS
    }
    assert {r["payload"]["answer_format"] for r in records if r["split"] == "eval"} <= set(EVAL_FORMATS)
    assert {r["payload"]["answer_format"] for r in records if r["split"] == "train"} <= set(TRAIN_FORMATS)
    questions = {
        split: {r["payload"]["question"] for r in records if r["split"] == split}
        for split in ("train", "eval")
    }
    assert not questions["train"] & questions["eval"]
    for r in records:  # not even the flawed variants use the other split's layouts
        foreign = TRAIN_FORMATS if r["split"] == "eval" else EVAL_FORMATS
        ids = tuple(s["id"] for s in r["payload"]["sessions"])
        for item in r["payload"]["pool"]:
            assert not any(parse_answer(item["source"], name, ids).well_formed for name in foreign)
    owner: dict[str, str] = {}
    for r in records:  # people are private to their template family
        for o in r["payload"]["others"]:
            assert owner.setdefault(o["person"], r["template"]) == r["template"]


def test_fact_values_are_disjoint_between_train_and_eval_kinds_and_absent_from_filler() -> None:
    def values(kinds: Sequence) -> set[str]:
        return {normalize(v) for kind in kinds for v in kind.values}

    assert not values(TRAIN_KINDS) & values(EVAL_KINDS)
    for kind in KINDS.values():
        assert len(set(kind.values)) == len(kind.values) >= 12
        for user, assistant in FILLER:
            for value in kind.values:
                assert not contains_value(user + " " + assistant, value), (kind.name, value)


# ---- the environment ------------------------------------------------------------------------------------


def play(env: HarnessLongMemoryEnv, seed: int, actions: Sequence[Action], submit: bool = True):
    """Play a script, skipping actions that are not legal; returns (last info, first draft was reference)."""
    _, info = env.reset(seed=seed)
    first_correct = None
    for action in actions:
        if not info["action_mask"][action]:
            continue
        _, _, terminated, truncated, info = env.step(action)
        ep = env._ep
        if action == Action.DRAFT and ep is not None:
            first_correct = ep.draft == env.domain.pool(ep.task).reference
        if terminated or truncated:
            return info, first_correct
    if submit:
        _, _, _, _, info = env.step(Action.SUBMIT)
    return info, first_correct


A = Action
N = 400


def test_drafting_after_retrieving_the_gold_sessions_is_more_often_right() -> None:
    env = HarnessLongMemoryEnv(split="all")
    blind = [play(env, s, [A.OBSERVE, A.DRAFT, A.SUBMIT]) for s in range(N)]
    informed = [play(env, s, [A.OBSERVE, *[A.RETRIEVE] * 4, A.DRAFT, A.SUBMIT]) for s in range(N)]
    rate = [np.mean([c for _, c in runs]) for runs in (blind, informed)]
    g = [np.mean([f["G"] for f, _ in runs]) for runs in (blind, informed)]
    assert rate[1] > rate[0] + 0.15 and g[1] > g[0] + 0.08, (rate, g)


def test_revise_after_an_informative_check_fixes_more_than_blind_revise() -> None:
    env = HarnessLongMemoryEnv(split="all", executor_profile=one_localised_rate(LongMemoryDomain))
    gather = [A.OBSERVE, *[A.RETRIEVE] * 4, A.DRAFT]
    checked = [play(env, s, [*gather, A.CHECK, A.REVISE, A.SUBMIT]) for s in range(N)]
    blind = [play(env, s, [*gather, A.REVISE, A.SUBMIT]) for s in range(N)]
    fixed = [np.mean([f["G"] == 1.0 for f, c in runs if c is False]) for runs in (checked, blind)]
    assert fixed[0] > fixed[1] + 0.3, fixed


def test_observation_after_draft_does_not_reveal_correctness() -> None:
    env = HarnessLongMemoryEnv(split="eval")
    task_id = env.tasks[5].task_id
    seen: dict[bool, set[bytes]] = {True: set(), False: set()}
    for seed in range(120):
        obs, _ = env.reset(seed=seed, options={"task_id": task_id})
        for action in (A.OBSERVE, A.RETRIEVE, A.DRAFT):
            obs, *_ = env.step(action)
        ep = env._ep
        seen[ep.draft == env.domain.pool(ep.task).reference].add(obs.tobytes())
    assert seen[True] and seen[False] and seen[True] == seen[False] and len(seen[True]) == 1


def test_retrieve_returns_new_sessions_until_masked_and_informedness_counts_gold() -> None:
    env = HarnessLongMemoryEnv(split="all")
    domain: LongMemoryDomain = env.domain
    for task in env.tasks[::7]:
        _, info = env.reset(seed=0, options={"task_id": task.task_id})
        gathered: list[str] = []
        while info["action_mask"][A.RETRIEVE]:
            _, _, _, _, info = env.step(A.RETRIEVE)
            step = env._ep.steps[-1]
            assert step["valid"] and 1 <= len(step["evidence"]) <= 2
            assert not set(step["evidence"]) & set(gathered)
            gathered += step["evidence"]
        assert len(gathered) >= MAX_RETRIEVED or not domain.index(task).next(gathered)
        gold = set(task.payload["gold_sessions"])
        assert domain.informedness(task, env._ep.context) == len(gold & set(gathered)) / len(gold)


def test_check_reports_coverage_and_feedback() -> None:
    env = HarnessLongMemoryEnv(split="all")
    coverages = {True: [], False: []}
    for seed in range(150):
        play(env, seed, [A.OBSERVE, *[A.RETRIEVE] * 4, A.DRAFT], submit=False)
        ep = env._ep
        correct = ep.draft == env.domain.pool(ep.task).reference
        env.step(A.CHECK)
        step = ep.steps[-1]
        assert step["check"]["coverage"] + step["check"]["missing"] == pytest.approx(1.0)
        assert bool(step.get("issues")) == step["failure"] == (step["check"]["coverage"] < 1.0)
        if step["failure"]:
            assert ep.feedback is not None and ep.feedback.localizes(ep.draft_hash)
        coverages[correct].append(step["check"]["coverage"])
    assert np.mean(coverages[True]) > np.mean(coverages[False]) + 0.15


def test_base_script_and_hms_signals() -> None:
    env = HarnessLongMemoryEnv(split="eval")
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        actions = []
        while True:
            action = LongMemoryDomain.base_action(obs, info["action_mask"])
            actions.append(Action(action).name)
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert actions == ["OBSERVE", "RETRIEVE", "DRAFT", "SUBMIT"]
        assert info["hms"]["CheckBeforeSubmit"] == {"fired": False, "applicable": True}
        assert info["hms"]["TestBeforeSubmit"]["applicable"] is False
        assert info["trajectory"]["signals"]["claim_support"] in (0.0, 1.0)
        json.dumps(info["trajectory"])


def test_check_env_and_random_legal_actions() -> None:
    check_env(HarnessLongMemoryEnv(), skip_render_check=True)
    env = HarnessLongMemoryEnv(split="all")
    for seed in range(50):
        _, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            assert 0.0 <= reward <= 1.0
        assert reward == info["G"] == pytest.approx(g_norm(info["rubric"]))


def test_review_reports_each_problem_in_words() -> None:
    """The CHECK's findings, exactly: the statement a retrieved session makes against the draft (its id,
    date and value, the draft's answer and citations), too many citations, unretrieved, unknown and
    non-supporting citations, and the layout; a cited session the harness never read that is older than
    the retrieved statement does not excuse the contradiction. Each finding is tagged with its component
    (a layout problem, such as an unknown session, as ``layout``)."""
    p = payload()
    galway = "retrieved session s03 (2023-01-20) gives 'Galway' for the asked value; the draft answers"
    cases = [
        (
            "ANSWER: Lisbon\nSOURCE: s01",
            ["s01", "s03"],
            (True, True, True, False),
            [f"{galway} 'Lisbon' citing s01"],
        ),
        (
            "ANSWER: Galway\nSOURCE: s04",
            ["s03", "s04"],
            (True, True, True, False),
            [f"{galway} 'Galway' citing s04"],
        ),
        (
            "ANSWER: Galway\nSOURCE: s03, s01",
            ["s01", "s03"],
            (True, False, True, False),
            [
                "cites 2 sessions; cite the one session that establishes the answer",
                f"{galway} 'Galway' citing s03, s01",
            ],
        ),
        (
            "ANSWER: Galway\nSOURCE: s03",
            ["s01"],
            (True, False, False, True),
            ["cited session(s) s03 were not retrieved, so the claim is unverified"],
        ),
        (
            "ANSWER: Lisbon\nSOURCE: s01",
            ["s03"],
            (True, False, False, False),
            [
                "cited session(s) s01 were not retrieved, so the claim is unverified",
                f"{galway} 'Lisbon' citing s01",
            ],
        ),
        (
            "ANSWER: Oslo\nSOURCE: s03",
            ["s03"],
            (True, True, False, False),
            ["no cited session mentions 'Oslo'", f"{galway} 'Oslo' citing s03"],
        ),
        (
            "ANSWER: Galway\nSOURCE: s09",
            ["s03"],
            (False, False, False, False),
            ["cites unknown session(s) s09", f"{galway} 'Galway' citing no session"],
        ),
        (
            "ANSWER: Galway\nSOURCE: s03, s04",
            ["s01"],
            (True, False, False, True),
            [
                "cites 2 sessions; cite the one session that establishes the answer",
                "cited session(s) s03, s04 were not retrieved, so the claim is unverified",
            ],
        ),
    ]
    components = {
        "retrieved session": "timeline_contradiction",
        "cites 2 sessions": "too_many_citations",
        "cited session(s)": "cites_unretrieved",
        "no cited session": "answer_not_in_cited",
        "cites unknown": "layout",
    }
    for text, retrieved, passed, issues in cases:
        got = review(p, text, retrieved)
        assert (got.passed, [str(i) for i in got.issues]) == (passed, issues), text
        tagged = [next(c for start, c in components.items() if i.startswith(start)) for i in issues]
        assert [i.component for i in got.issues] == tagged, text


def test_review_as_of_counts_a_statement_made_on_the_asked_date() -> None:
    """An ``as_of`` question points at the latest statement on or before the asked date: one made that
    very day counts."""
    p = {**payload("as_of"), "as_of": "2023-01-20"}
    assert review(p, "ANSWER: Galway\nSOURCE: s03", ["s01", "s03"]).passed == (True, True, True, True)
    assert review(p, "ANSWER: Lisbon\nSOURCE: s01", ["s01", "s03"]).passed[3] is False


# A twelve-session history (two-digit ids past s09): the user states Lisbon (s01), Galway (s03), Cork (s11).
LONG = [
    *SESSIONS,
    *(
        session(f"s{n:02d}", f"2023-03-{n:02d}", "User: Any tips for a rainy weekend?", "Assistant: Museums.")
        for n in range(6, 11)
    ),
    session("s11", "2023-03-20", "User: Big news: I moved from Galway to Cork last week!", "Assistant: Wow."),
    session("s12", "2023-03-25", "User: How do I fix a squeaky door hinge?", "Assistant: Oil it."),
]
ALL_STATED = ["s01", "s03", "s11"]


def test_review_picks_the_statement_each_question_form_points_at() -> None:
    """With three statements retrieved, ``current`` points at the latest (s11, a two-digit id read as
    session 11), ``previous`` at the one just before it (s03, not an earlier one), and ``as_of`` at the
    latest on or before the date: s01 alone by 2023-01-15, s11 by 2023-03-22."""
    fine = (True, True, True, True)
    current = payload(sessions=LONG)
    assert review(current, "ANSWER: Cork\nSOURCE: s11", ALL_STATED).passed == fine
    assert review(current, "ANSWER: Galway\nSOURCE: s03", ALL_STATED).passed[3] is False
    previous = payload("previous", sessions=LONG)
    assert review(previous, "ANSWER: Galway\nSOURCE: s03", ALL_STATED).passed == fine
    assert review(previous, "ANSWER: Lisbon\nSOURCE: s01", ALL_STATED).passed[3] is False
    as_of = payload("as_of", sessions=LONG)
    assert review(as_of, "ANSWER: Lisbon\nSOURCE: s01", ALL_STATED).passed == fine
    assert review(as_of, "ANSWER: Galway\nSOURCE: s03", ALL_STATED).passed[3] is False
    late = {**as_of, "as_of": "2023-03-22"}
    assert review(late, "ANSWER: Cork\nSOURCE: s11", ALL_STATED).passed == fine


def test_review_checks_a_single_session_fact_against_its_one_statement() -> None:
    """A ``single`` question (no update, no date asked) points at the latest retrieved statement, as
    ``current`` does: the one session stating the fact is checked against the draft."""
    single = payload("single", sessions=SESSIONS[:2])
    assert review(single, "ANSWER: Lisbon\nSOURCE: s01", ["s01", "s02"]).passed == (True, True, True, True)
    assert review(single, "ANSWER: Porto\nSOURCE: s01", ["s01", "s02"]).passed[3] is False


def test_review_excuses_a_contradiction_only_for_an_unretrieved_citation_dated_after_it() -> None:
    """A draft citing a session the harness never read is checked against the retrieved statement
    (Galway, s03, 2023-01-20) unless the cited session is dated after it (it may be the update that
    superseded it): s11 is, s02 is dated before, and a session dated the same day is not after it."""
    p = payload(sessions=LONG)
    assert review(p, "ANSWER: Cork\nSOURCE: s11", ["s03"]).passed == (True, False, False, True)
    assert review(p, "ANSWER: Tallinn\nSOURCE: s02", ["s03"]).passed == (True, False, False, False)
    same_day = payload(sessions=[*LONG[:3], {**LONG[3], "date": LONG[2]["date"]}, *LONG[4:]])
    assert review(same_day, "ANSWER: Galway\nSOURCE: s04", ["s03"]).passed == (True, False, False, False)


# -- the parsing helpers, called directly: ``parse_answer`` keeps its results per text, so a text parsed
# -- once (e.g. by an earlier test in the same process) would not run them again
def test_repeated_json_keys_are_refused() -> None:
    from harness_gym.domains.long_memory.verifier import _unique_keys

    assert _unique_keys([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}
    with pytest.raises(ValueError, match=r"^repeated key in a JSON object$"):
        _unique_keys([("a", 1), ("a", 2)])


@pytest.mark.parametrize(
    ("name", "text", "found"),
    [
        ("kv", "  ANSWER:  Oslo \nSOURCE: s03\n", ("Oslo", ("s03",))),
        ("kv", "ANSWER: Oslo\nSOURCE: s03 and more", None),  # the whole text, nothing else
        ("inline", "Answer: Oslo [s03]", ("Oslo", ("s03",))),
        ("pipe", "Oslo | source=s03", ("Oslo", ("s03",))),
        ("json", ' {"answer": " Oslo ", "source": "s03"} ', ("Oslo", ("s03",))),
        ("json", '{"answer": "Oslo", "source": "s03", "note": 1}', None),
        ("json", '{"answer": "Oslo"}', None),
        ("json", '{"answer": "Oslo", "answer": "Rome", "source": "s03"}', None),
        ("json", '{"answer": "  ", "source": "s03"}', None),
        ("json", '{"answer": 3, "source": "s03"}', None),
        ("json", '{"answer": "Oslo", "source": 3}', None),
        ("json", '{"answer": "Oslo", "source": "session three"}', None),
        ("json", '["Oslo", "s03"]', None),
        ("json", "ANSWER: Oslo", None),
        ("json", "[" * 100_000, None),
    ],
)
def test_the_required_layout_is_read_strictly(name: str, text: str, found: tuple | None) -> None:
    from harness_gym.domains.long_memory.verifier import _strict

    assert _strict(FORMATS[name], text) == found


def test_a_json_reply_may_cite_several_sessions() -> None:
    from harness_gym.domains.long_memory.verifier import _strict

    text = json.dumps({"answer": "Oslo", "source": "s03, s07"})
    assert _strict(FORMATS["json"], text) == ("Oslo", ("s03", "s07"))


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("answer: Oslo; from s03", "Oslo"),
        ("**Final answer** = Oslo [s03]", "Oslo"),
        ("text <answer> Oslo </answer> more", "Oslo"),
        ('{"answer": "Oslo"', "Oslo"),
        ("Oslo | source = s03", "Oslo"),
        ("ANSWER: Oslo\n<answer>Oslo</answer>", "Oslo"),  # the same value twice
        ("Answer: Oslo | source=s03", "Oslo"),  # values that contain one another agree
        ("ANSWER: Oslo\n<answer>Rome</answer>", None),  # two answers are no answer
        ("answer: ;", None),
        ("no labelled value", None),
    ],
)
def test_the_lenient_reader_takes_the_one_answer_the_text_gives(text: str, answer: str | None) -> None:
    from harness_gym.domains.long_memory.verifier import _loose_answer

    assert _loose_answer(text) == answer
