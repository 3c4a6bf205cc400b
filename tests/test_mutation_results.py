"""Results files, scoring and the leaderboard: the decisions a merged or ranked file rests on, each on a
hand-built document (no episode is played)."""

from __future__ import annotations

import copy

import pytest
from test_leaderboard import MEAN_AND_IQM_DISAGREE, hand_built

from harness_gym.evaluation import results


def test_merge_keeps_every_policy_and_marks_a_smoke_part() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    other = hand_built({"base": MEAN_AND_IQM_DISAGREE["base"], "late": [50.0] * 8})
    other["smoke"] = True
    other["harness_gym"] = "0.0.other"
    merged = results.merge([("a.json", doc), ("b.json", other)])
    assert merged["smoke"] is True
    assert merged["harness_gym"] == ", ".join(sorted({doc["harness_gym"], "0.0.other"}))
    assert set(merged["policies"]) == {"base", "spiky", "steady", "late"}
    env = next(iter(doc["scores"]))
    assert set(merged["scores"][env]["policies"]) == {"base", "spiky", "steady", "late"}
    assert results.merge([("a.json", doc)])["smoke"] is False


def test_merge_refuses_a_policy_that_played_other_episodes() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    other = copy.deepcopy(doc)
    env = next(iter(doc["scores"]))
    other["scores"][env]["policies"]["base"]["episode_G"][0] += 1.0
    with pytest.raises(
        results.ResultsError,
        match=r"^'base' on .* played other episodes in b\.json than in a\.json; the runs are not comparable "
        r"\(another executor, profile or code\?\)$",
    ):
        results.merge([("a.json", doc), ("b.json", other)])
    with pytest.raises(results.ResultsError, match=r"^no results to merge$"):
        results.merge([])


ENV = "HarnessPlanning-v0"


def _episodes(G_by_seed: dict[int, list[float]], tasks=("t0", "t1")) -> list:
    from types import SimpleNamespace

    return [
        SimpleNamespace(seed=seed, task_id=task, rollout=0, G=g)
        for seed, values in G_by_seed.items()
        for task, g in zip(tasks, values, strict=True)
    ]


def test_runs_scores_each_seed_from_its_own_episodes_in_protocol_order() -> None:
    from harness_gym.evaluation.reference_scores import normalized_score

    episodes = _episodes({1: [0.1234567891, 0.3], 0: [0.5, 0.7]})
    record = results.runs(ENV, episodes, ("t0", "t1"), (0, 1), 1)
    assert record["episode_G"] == [0.5, 0.7, 0.123457, 0.3]
    assert record["seed_scores"] == {
        "0": pytest.approx(normalized_score(ENV, 0.6)),
        "1": pytest.approx(normalized_score(ENV, (0.1234567891 + 0.3) / 2)),
    }
    assert list(record["seed_scores"]) == ["0", "1"]


@pytest.mark.parametrize(
    "episodes",
    [
        _episodes({0: [0.5, 0.7]}),  # seed 1 missing
        _episodes({0: [0.5, 0.7], 1: [0.1, 0.3]}) + _episodes({1: [0.1, 0.3]}),  # seed 1 twice
        _episodes({0: [0.5, 0.7], 1: [0.1, 0.3], 2: [0.0, 0.0]}),  # a seed outside the protocol
    ],
)
def test_runs_refuses_episodes_that_do_not_cover_the_protocol_once(episodes: list) -> None:
    with pytest.raises(results.ResultsError, match=f"^{ENV}: episodes do not cover the protocol once each"):
        results.runs(ENV, episodes, ("t0", "t1"), (0, 1), 1)


def test_validate_checks_each_seed_score_against_its_episodes() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    env = next(iter(doc["scores"]))
    run = doc["scores"][env]["policies"]["steady"]
    run["seed_scores"]["3"] += 0.0009  # within SCORE_TOLERANCE
    results.validate(doc)
    run["seed_scores"]["3"] += 0.0011
    with pytest.raises(results.ResultsError, match=r"^results: .* steady: seed 3 scores 30\.0020 but its"):
        results.validate(doc)
    run["seed_scores"]["3"] -= 0.004  # as far below
    with pytest.raises(results.ResultsError, match=r"seed 3 scores 29\.9980"):
        results.validate(doc)


def test_validate_names_an_undescribed_policy_other_seeds_and_a_short_run() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    env = next(iter(doc["scores"]))
    missing = copy.deepcopy(doc)
    del missing["policies"]["spiky"]
    with pytest.raises(results.ResultsError, match="spiky: the policy is not described under 'policies'"):
        results.validate(missing, "x.json")
    seeds = copy.deepcopy(doc)
    run = seeds["scores"][env]["policies"]["spiky"]
    run["seed_scores"]["9"] = run["seed_scores"].pop("7")
    with pytest.raises(results.ResultsError, match=r"^x\.json: .* spiky: seed scores for seeds"):
        results.validate(seeds, "x.json")
    short = copy.deepcopy(doc)
    short["scores"][env]["policies"]["spiky"]["episode_G"].pop()
    with pytest.raises(results.ResultsError, match=r"spiky: 15 episodes, the protocol has 16$"):
        results.validate(short, "x.json")
    unordered = copy.deepcopy(doc)
    run = unordered["scores"][env]["policies"]["spiky"]
    run["seed_scores"] = dict(reversed(run["seed_scores"].items()))
    assert results.validate(unordered) is unordered


def test_validate_names_a_schema_break_at_its_place() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    doc["protocol"]["rollouts"] = "one"
    with pytest.raises(
        results.ResultsError, match=r"^f\.json does not follow harness-gym-results-v1 at protocol/rollouts: "
    ):
        results.validate(doc, "f.json")
    with pytest.raises(results.ResultsError, match=r"at the top level: "):
        results.validate([], "f.json")
    with pytest.raises(results.ResultsError, match=r"at the top level: inf is not a finite"):
        results.validate(float("inf"), "f.json")


def test_load_and_write_round_trip_and_refuse_what_is_not_a_results_file(tmp_path) -> None:
    import numpy as np

    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    path = results.write(doc, tmp_path / "r.json")
    assert results.load(path) == doc
    assert results.load(str(path)) == doc
    text = path.read_text()
    assert text.endswith("}\n") and '"episode_G": [' in text
    line = next(x for x in text.splitlines() if '"episode_G"' in x)
    assert line.rstrip(",").endswith("]")  # a numeric array on one line
    with pytest.raises(results.ResultsError, match=r"^no results file .*absent\.json$"):
        results.load(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(results.ResultsError, match=r"bad\.json is not a readable JSON file \("):
        results.load(tmp_path / "bad.json")
    (tmp_path / "old.json").write_text('{"scores": {}}')
    with pytest.raises(
        results.ResultsError, match=r"old\.json has no 'schema' key: not a harness-gym-results-v1"
    ):
        results.load(tmp_path / "old.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(results.ResultsError, match=r"list\.json does not follow"):
        results.load(tmp_path / "list.json")
    assert results.json_default(np.float32(1.5)) == 1.5
    assert results.json_default(np.arange(2)) == [0, 1]
    assert results.json_default(tmp_path) == str(tmp_path)
    assert results.json_default(frozenset({"b", "a"})) == ["a", "b"]
    with pytest.raises(TypeError, match=r"^object is not JSON serialisable$"):
        results.json_default(object())


def test_episode_scores_are_normalised_per_episode_one_row_per_seed() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    env = next(iter(doc["scores"]))
    scores = results.episode_scores(doc, env, "spiky")
    assert scores.shape == (8, 2)
    assert scores[:, 0] == pytest.approx([10.0] * 6 + [100.0] * 2)
    assert scores.mean(axis=1) == pytest.approx(
        [doc["scores"][env]["policies"]["spiky"]["seed_scores"][str(s)] for s in range(8)]
    )


def test_records_of_protocol_policies_and_simulator() -> None:
    assert results.protocol("train", (3, 1), 2) == {
        "version": results.PROTOCOL_VERSION,
        "split": "train",
        "seeds": [3, 1],
        "rollouts": 2,
    }
    assert results.policy_meta("learner", 1) == {"kind": "learner", "per_seed_models": True}
    assert results.policy_meta("scripted", act="greedy") == {
        "kind": "scripted",
        "per_seed_models": False,
        "act": "greedy",
    }
    with pytest.raises(results.ResultsError, match=r"^unknown policy kind 'robot'; expected one of"):
        results.policy_meta("robot")
    record = results.simulator()
    assert record == results.simulator("simulated")
    assert record["executor"] == "simulated" and record["profile"]["name"] == "default"
    assert len(record["profile"]["sha256"]) == 64
    assert results.simulator(profile="weak")["profile"]["sha256"] != record["profile"]["sha256"]
    with pytest.raises(results.ResultsError, match=r"^cannot record executor 'robot': only the simulated"):
        results.simulator("robot")

    class Config:
        def content_key(self) -> dict:
            return {"model": "m"}

    assert results.simulator(Config())["executor"] == {"model": "m"}
    assert results.simulator(type("Executor", (), {"config": Config()})())["profile"] is None


def test_merge_refuses_other_tasks_references_or_descriptions_naming_the_files() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    env = next(iter(doc["scores"]))
    for key, value in (("tasks", ["t0", "t9"]), ("reference", {"random": 0.0, "expert": 2.0})):
        other = copy.deepcopy(doc)
        other["scores"][env][key] = value
        with pytest.raises(
            results.ResultsError, match=f"^b.json cannot be merged on {env}: other {key} than"
        ):
            results.merge([("a.json", doc), ("b.json", other)])
    other = copy.deepcopy(doc)
    other["policies"]["spiky"]["kind"] = "outside"
    with pytest.raises(
        results.ResultsError,
        match=r"^policy 'spiky' is described differently in b\.json \(kind 'learner' vs 'outside'\)",
    ):
        results.merge([("a.json", doc), ("b.json", other)])
    other = copy.deepcopy(doc)
    other["protocol"]["split"] = "train"
    with pytest.raises(
        results.ResultsError,
        match=r"^b\.json cannot be merged with a\.json: another protocol \(split 'eval' vs 'train'\)",
    ):
        results.merge([("a.json", doc), ("b.json", other)])
    third = copy.deepcopy(doc)
    third["scores"][env]["policies"]["base"]["episode_G"][0] += 1.0
    with pytest.raises(results.ResultsError, match=r"played other episodes in c\.json than in a\.json"):
        results.merge([("a.json", doc), ("b.json", doc), ("c.json", third)])
    assert results._differ(1, 2) == "1 vs 2"
    assert results._differ({"a": 1, "b": 2}, {"b": 3, "a": 1}) == "b 2 vs 3"
    assert results._differ({"a": 1}, {"a": 1, "b": 2}) == "b None vs 2"  # a key of one side only
    assert results._differ({1: 0, "a": 1}, {1: 0, "a": 2}) == "a 1 vs 2"  # keys of mixed types
    assert results._differ({"a": 1}, None) == "{'a': 1} vs None"


def _board(tmp_path, doc=None, **kwargs):
    from test_leaderboard import write

    from harness_gym.bench.leaderboard import leaderboard

    path = write(doc or hand_built(MEAN_AND_IQM_DISAGREE), tmp_path / "r.json")
    return leaderboard([path], reps=50, poi_reps=50, **kwargs)


def test_the_ranked_rows_carry_each_policys_own_figures(tmp_path) -> None:
    from harness_gym.bench.leaderboard import ranking

    doc = _board(tmp_path)
    rows = {row["policy"]: row for row in ranking(doc)}
    metrics = doc["aggregate"]["metrics"]
    for name, row in rows.items():
        for key in ("iqm", "mean", "optimality_gap", "interval"):
            assert row[key] == metrics[name][key]
    assert rows["base"]["kind"] == "scripted" and rows["spiky"]["kind"] == "learner"
    assert rows["base"]["poi_base"] is None and rows["steady"]["poi_best"] is None
    assert rows["spiky"]["poi_base"] == doc["aggregate"]["paired"]["spiky"]["base"]["poi"]
    assert rows["spiky"]["poi_best"] == doc["aggregate"]["paired"]["spiky"]["best"]["poi"]
    doc["policies"].pop("base")
    assert {row["policy"]: row["kind"] for row in ranking(doc)}["base"] is None


def test_the_markdown_table_states_the_ranking_and_its_provenance(tmp_path) -> None:
    from harness_gym.bench.leaderboard import markdown

    text = markdown(_board(tmp_path), ["r.json", "s.json"])
    lines = text.splitlines()
    # a point interval is marked ° and the table is followed by what that means
    assert lines[0] == "# Leaderboard" and text.endswith("resampled runs or on none.\n")
    assert lines[2] == (
        "1 setting (HarnessPlanning-v0); protocol v1: eval split x seeds (0, 1, 2, 3, 4, 5, 6, 7) x 1 "
        "rollout; simulator v2. Files: r.json, s.json."
    )
    assert "best = steady (highest IQM; references left out)." in text
    table = lines[
        lines.index(
            "| # | Policy | Kind | IQM | Mean | Optimality gap | Interval over | P(> Base) | P(> best) |"
        ) :
    ]
    assert table[1] == "| :--- | :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: |"
    assert table[2] == (
        "| 1 | steady | learner | 30.0 [30.0, 30.0]° | 30.0 [30.0, 30.0]° | 70.0 [70.0, 70.0]° | seeds "
        "| 1.00 [1.00, 1.00]° | — |"
    )
    assert table[3].startswith("| 2 | spiky | learner | 10.0 [10.0, 55.0] | 32.5 [10.0, 55.0] | ")
    assert table[4] == (
        "| 3 | base | scripted | 0.0 [0.0, 0.0]° | 0.0 [0.0, 0.0]° | 100.0 [100.0, 100.0]° | seeds | — "
        "| 0.00 [0.00, 0.00]° |"
    )
    assert "Left out" not in text and "smoke" not in text


def test_the_markdown_leaves_an_undescribed_kind_empty_and_names_a_missing_interval(tmp_path) -> None:
    """A policy without a description has an empty Kind cell; one without an interval reads "none"."""
    from harness_gym.bench.leaderboard import markdown

    doc = _board(tmp_path)
    doc["policies"].pop("base")
    doc["aggregate"]["metrics"]["base"]["interval"] = None
    row = next(line for line in markdown(doc).splitlines() if line.startswith("| 3 | base |"))
    assert row.startswith("| 3 | base |  | 0.0 ") and "° | none | — |" in row


def test_the_markdown_marks_a_smoke_run_and_what_was_left_out(tmp_path) -> None:
    from harness_gym.bench.leaderboard import _cell, markdown
    from harness_gym.bench.report import SMOKE_NOTE

    doc = _board(tmp_path)
    doc["smoke"] = True
    doc["protocol"]["rollouts"] = 2
    doc["aggregate"]["dropped_policies"] = {"late": ["EnvA", "EnvB"]}
    doc["aggregate"]["dropped_settings"] = {"EnvC": ["x", "y"]}
    lines = markdown(doc).splitlines()
    assert lines[:4] == ["# Leaderboard (smoke run)", "", SMOKE_NOTE, ""]
    assert lines[4].endswith(" x 2 rollouts; simulator v2.")
    assert lines[6] == (
        "Left out: late (no scores on EnvA, EnvB; `--missing drop-setting` ranks every policy on the "
        "settings all of them have); setting EnvC (no scores for x, y)."
    )
    assert _cell(None, 1) == _cell({}, 1) == "—"
    assert _cell({"estimate": 1.234, "ci_low": None}, 2) == "1.23"
    assert _cell({"estimate": 1.0, "ci_low": 0.5, "ci_high": 2.0}, 1) == "1.0 [0.5, 2.0]"


def test_write_leaderboard_writes_the_table_and_the_merged_file(tmp_path) -> None:
    from harness_gym.bench.leaderboard import markdown, write_leaderboard

    doc = _board(tmp_path)
    paths = write_leaderboard(doc, tmp_path / "out" / "new", ["r.json"], figures=False)
    assert paths == {
        "leaderboard": tmp_path / "out" / "new" / "leaderboard.md",
        "results": tmp_path / "out" / "new" / "results.json",
    }
    assert paths["leaderboard"].read_text() == markdown(doc, ["r.json"])
    assert results.load(paths["results"]) == doc


def test_write_indents_by_one_and_keeps_numeric_arrays_on_one_line(tmp_path) -> None:
    import numpy as np

    doc = {"a": np.float64(1.5), "b": [1e-07, -2.0, 3], "c": {"d": ["x", "y"]}}
    path = results.write(doc, tmp_path / "w.json")
    assert path.read_text() == (
        '{\n "a": 1.5,\n "b": [1e-07, -2.0, 3],\n "c": {\n  "d": [\n   "x",\n   "y"\n  ]\n }\n}\n'
    )


EXPLANATION = (
    "Normalised scores (random = 0, expert = 100). IQM, mean and optimality gap with 95% bootstrap "
    "intervals: over seeds (stratified within settings) for one model per seed, over episodes for one "
    "policy playing every seed; no interval from a single seed. P(> Base) and P(> best): the share of "
    "paired runs (same setting and seed) scoring higher, with its paired interval; best = steady (highest "
    "IQM; references left out)."
)


def test_the_leaderboard_uses_the_replications_and_rule_it_is_given(tmp_path) -> None:
    from test_leaderboard import write

    from harness_gym.bench.leaderboard import leaderboard, markdown

    path = write(hand_built(MEAN_AND_IQM_DISAGREE), tmp_path / "r.json")
    doc = leaderboard([path], reps=1, poi_reps=2, missing="drop-setting")
    assert doc["aggregate"]["bootstrap"]["reps"] == 1 and doc["aggregate"]["bootstrap"]["poi_reps"] == 2
    assert doc["aggregate"]["missing"] == "drop-setting"
    lines = markdown(doc).splitlines()
    assert lines[1] == "" and lines[3] == "" and lines[4] == EXPLANATION and lines[5] == ""
    doc["aggregate"]["settings"] = ["EnvA", "EnvB"]
    doc["aggregate"]["dropped_settings"] = {"EnvC": ["x"]}
    lines = markdown(doc).splitlines()
    assert lines[2].startswith("2 settings (EnvA, EnvB); protocol v")
    assert lines[3:5] == ["", "Left out: setting EnvC (no scores for x)."]
    assert lines[5] == "" and lines[6] == EXPLANATION


def test_write_leaderboard_links_its_figures_by_default_and_rewrites_in_place(tmp_path) -> None:
    from harness_gym.bench.leaderboard import markdown, write_leaderboard

    doc = _board(tmp_path)
    out = tmp_path / "out"
    paths = write_leaderboard(doc, out)
    figures = {key: path for key, path in paths.items() if key not in ("leaderboard", "results")}
    assert figures and all(path.parent == out and path.exists() for path in figures.values())
    links = "\n".join(f"![{key}]({path.name})" for key, path in figures.items())
    assert paths["leaderboard"].read_text() == markdown(doc) + "\n" + links + "\n"
    assert write_leaderboard(doc, out) == paths  # an existing directory is written again


def test_the_default_protocol_is_the_papers_and_a_document_keeps_its_smoke_mark() -> None:
    from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS

    assert results.protocol() == {
        "version": results.PROTOCOL_VERSION,
        "split": "eval",
        "seeds": list(EVAL_SEEDS),
        "rollouts": EVAL_ROLLOUTS,
    }
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    smoke = results.document(doc["protocol"], doc["simulator"], doc["policies"], doc["scores"], smoke=True)
    assert smoke["smoke"] is True and doc["smoke"] is False


def test_runs_refuses_an_episode_of_another_seed_in_place_of_a_missing_one() -> None:
    """As many episodes as the protocol has, one of them outside it: a missing triple is named."""
    episodes = _episodes({0: [0.5, 0.7], 1: [0.1, 0.3]})[:-1] + _episodes({2: [0.0]}, tasks=("t0",))
    with pytest.raises(results.ResultsError, match=r"missing e\.g\. \[\(1, 't1', 0\)\]\)$"):
        results.runs(ENV, episodes, ("t0", "t1"), (0, 1), 1)


def test_runs_names_at_most_three_missing_triples() -> None:
    with pytest.raises(results.ResultsError) as refused:
        results.runs(ENV, _episodes({0: [0.5, 0.7]}), ("t0", "t1"), (0, 1, 2), 1)
    assert str(refused.value).endswith("missing e.g. [(1, 't0', 0), (1, 't1', 0), (2, 't0', 0)])")


@pytest.mark.parametrize("length", (200, 201))
def test_a_schema_message_is_cut_after_200_characters(length: int) -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    doc["protocol"]["rollouts"] = "x" * (length - len(" is not of type 'integer'") - 2)
    message = f"{doc['protocol']['rollouts']!r} is not of type 'integer'"
    assert len(message) == length
    with pytest.raises(results.ResultsError) as refused:
        results.validate(doc, "f.json")
    shown = message if length <= 200 else message[:200] + " ..."
    assert str(refused.value) == f"f.json does not follow {results.SCHEMA} at protocol/rollouts: {shown}"


def test_seeds_are_compared_as_numbers_not_as_text() -> None:
    """Seeds 10 and 2 are checked as numbers (2 before 10) in the protocol and in every run alike."""
    from test_leaderboard import TASKS

    entry = results.setting(ENV, TASKS)
    entry["policies"]["base"] = results.runs(
        ENV, _episodes({10: [0.1, 0.2], 2: [0.3, 0.4]}), TASKS, (10, 2), 1
    )
    policies = {"base": results.policy_meta("scripted")}
    doc = results.document(results.protocol("eval", (10, 2), 1), results.simulator(), policies, {ENV: entry})
    assert results.validate(doc) is doc


def test_a_seed_score_may_lie_exactly_the_tolerance_from_its_episodes() -> None:
    from harness_gym.evaluation.reference_scores import reference_scores

    random, _ = reference_scores(ENV)
    entry = results.setting(ENV, ("t0", "t1"))
    run = results.runs(ENV, _episodes({0: [random, random]}), ("t0", "t1"), (0,), 1)
    assert run["seed_scores"] == {"0": 0.0}
    run["seed_scores"]["0"] = results.SCORE_TOLERANCE
    entry["policies"]["base"] = run
    policies = {"base": results.policy_meta("scripted")}
    doc = results.document(results.protocol("eval", (0,), 1), results.simulator(), policies, {ENV: entry})
    assert doc["scores"][ENV]["policies"]["base"]["seed_scores"] == {"0": results.SCORE_TOLERANCE}


def test_write_turns_numpy_values_into_json(tmp_path) -> None:
    import json

    import numpy as np

    path = results.write({"n": np.int64(3), "a": np.arange(2), "p": tmp_path}, tmp_path / "x.json")
    assert json.loads(path.read_text()) == {"n": 3, "a": [0, 1], "p": str(tmp_path)}


def test_merge_names_the_merged_document_where_it_breaks_the_schema() -> None:
    """merge checks its result, not its parts: a part that breaks the schema is named as the merged one."""
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    doc["protocol"]["rollouts"] = "one"
    with pytest.raises(
        results.ResultsError,
        match=r"^merged results does not follow harness-gym-results-v1 at protocol/rollouts",
    ):
        results.merge([("a.json", doc)])
