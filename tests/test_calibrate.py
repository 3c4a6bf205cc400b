"""harness-gym calibrate: probe episodes recover a known simulated profile within their intervals."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness_gym.cli.main import main
from harness_gym.envs.registry import executor_profile
from harness_gym.evaluation.calibrate import calibrate_env, truth_of, wilson
from harness_gym.executors.profiles import DomainProfile, DraftParams, ExecutorProfile, Mechanism
from harness_gym.executors.prompts import INSTRUCTION_HEADING

KNOWN = Mechanism(
    p_fix={"localised": 0.5, "verdict": 0.3, "none": 0.1},
    p_fix_form=0.9,
    p_break=0.2,
    p_reflaw=0.7,
    fix_decay=0.6,
    judge_tpr=0.7,
    judge_fpr=0.25,
    temperature=1.0,  # probes are repeated identical requests: they measure per-call rates
)


def _known(env_domain: str, draft: DraftParams) -> ExecutorProfile:
    return executor_profile("default").with_domain(env_domain, DomainProfile(draft=draft, mechanism=KNOWN))


@pytest.mark.parametrize(
    ("env_id", "domain", "draft"),
    [
        ("HarnessPlanning-v0", "planning", DraftParams({"easy": 0.3, "standard": 0.15, "hard": 0.05}, 0.25)),
        (
            "HarnessMultiTool-v0",
            "multi_tool",
            DraftParams({"easy": 0.25, "standard": 0.1, "hard": 0.05}, 0.5, p_tool_correct=0.6),
        ),
    ],
)
def test_calibrate_recovers_a_known_simulated_profile(env_id, domain, draft):
    # 12-13 intervals at 95%: about one seed in eight misses two of them by chance (seed 0 does since
    # every probe request draws from a generator of its own)
    profile = _known(domain, draft)
    measured, estimates = calibrate_env(env_id, executor_profile=profile, probes=300, seed=1)
    truth = truth_of(profile.domain(domain))
    covered = [name for name, e in estimates.items() if e.covers(truth[name])]
    missed = {name: (truth[name], estimates[name]) for name in estimates if name not in covered}
    assert len(covered) >= 0.9 * len(estimates), missed
    # the written profile holds the point estimates
    assert measured.mechanism.p_fix["localised"] == pytest.approx(estimates["p_fix[localised]"].value)
    assert measured.draft.flaw_weights == profile.domain(domain).draft.flaw_weights


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_localised_fix_rates_are_measured_per_flaw_class(temperature):
    """Form and content flaws are repaired at different rates; one pooled rate would be neither. Each class
    gets its own probes (feedback that names the flaw, evidence gathered), also against a greedy executor,
    whose probes each stand for an episode of their own."""
    draft = DraftParams({"easy": 0.2, "standard": 0.1, "hard": 0.05}, 0.2)
    mechanism = replace(KNOWN, p_fix={"localised": 0.2, "verdict": 0.1, "none": 0.1}, temperature=temperature)
    profile = executor_profile("default").with_domain(
        "coding", DomainProfile(draft=draft, mechanism=mechanism)
    )
    measured, estimates = calibrate_env("HarnessCoding-v0", executor_profile=profile, probes=150, seed=2)
    content, form = estimates["p_fix[localised]"], estimates["p_fix_form"]
    assert content.n >= 100 and form.n >= 100
    assert content.covers(0.2) and form.covers(0.9) and content.high < form.low
    assert measured.mechanism.p_fix_form == pytest.approx(form.value)
    assert measured.mechanism.p_fix["localised"] == pytest.approx(content.value)


def test_wilson_interval():
    e = wilson(45, 100)
    assert e.low < 0.45 < e.high and e.low == pytest.approx(0.3561, abs=1e-3)
    assert wilson(0, 0).n == 0 and (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)


def test_cli_writes_a_loadable_profile_and_prints_a_table(tmp_path, capsys):
    out = tmp_path / "mine.json"
    assert main(["calibrate", "--env", "HarnessPlanning-v0", "--probes", "40", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "p_fix[localised]" in printed and "judge_tpr" in printed
    profile = ExecutorProfile.load(out)
    assert set(profile.domains) == {"planning"}
    assert json.loads(out.read_text())["name"] == "mine"


@pytest.mark.usefixtures("loopback_llm_env")
def test_calibrate_measures_a_chat_llm_endpoint():
    """A scripted chat model that fixes a plan only when told where it fails, judges exactly and cannot
    draft: calibrate reads those behaviours off the OpenAI-compatible endpoint."""
    import gymnasium as gym
    from test_llm_executor import ChatServer

    from harness_gym.executors import OpenAIConfig

    domain = gym.make("HarnessPlanning-v0", split="all").unwrapped.domain
    pools = [domain.pool(task) for task in domain.tasks()]
    references = {p.reference.rstrip("\n") for p in pools}
    fix_of = {f.source.rstrip("\n"): p.reference for p in pools for f in p.flawed}

    def respond(payload: dict) -> str:
        content = payload["messages"][-1]["content"]
        if "## Current draft\n```\n" not in content:
            return "I am not able to write this plan."  # drafts and tool calls fail to parse
        draft = content.split("## Current draft\n```\n", 1)[1].split("\n```", 1)[0]
        turn = f"{INSTRUCTION_HEADING}\n"
        if turn in content and "PASS" in content.rsplit(turn, 1)[1][:400]:
            return "PASS" if draft in references else "FAIL: the plan does not reach the goal"
        problems = (
            content.split("## Problems reported by the harness", 1)[1] if "## Problems" in content else ""
        )
        located = any(
            line.startswith("- ") and not line.startswith("- judge") for line in problems.splitlines()
        )
        return f"Sure, here is my answer.\n\n{fix_of.get(draft, draft) if located else draft}\n"

    server = ChatServer(respond)
    try:
        config = OpenAIConfig(model="scripted-model", base_url=server.base_url, max_retries=0)
        _, est = calibrate_env("HarnessPlanning-v0", executor=config, probes=30, seed=0)
    finally:
        server.close()
    assert est["p_fix[localised]"].value == 1.0 and est["p_fix[localised]"].low > 0.85
    # without located problems the model returns the draft; the chat parser may still normalise a
    # malformed plan's layout into a valid plan, so these are small rather than exactly zero
    assert est["p_fix[verdict]"].value <= 0.1 and est["p_fix[none]"].value <= 0.1
    # the same normalisation is the only change an unfixed reply can show (malformed drafts are about a
    # fifth of the flawed pool): never a new flaw of another kind
    assert est["p_reflaw"].value <= 0.15
    assert est["judge_tpr"].value == 1.0 and est["judge_fpr"].value == 0.0
    assert est["p_break"].value == 0.0
    assert est["p_correct[standard]"].value == 0.0


def test_probe_estimates_do_not_depend_on_the_concurrency():
    profile = _known("planning", DraftParams({"easy": 0.3, "standard": 0.15, "hard": 0.05}, 0.25))
    one = calibrate_env("HarnessPlanning-v0", executor_profile=profile, probes=40, seed=3)
    many = calibrate_env("HarnessPlanning-v0", executor_profile=profile, probes=40, seed=3, concurrency=4)
    assert one == many


@pytest.mark.usefixtures("loopback_llm_env")
def test_a_model_that_never_answers_in_form_measures_nothing_and_exits_non_zero(tmp_path, capsys):
    """A chat model whose replies never hold an answer in form (judges without PASS/FAIL, drafts and
    revisions without a plan): every probe goes unanswered, so no parameter is measured (never a rate
    of 0 marked measured); the profile keeps its base values, marked unmeasured, and the command exits
    non-zero with one line."""
    from test_llm_executor import ChatServer, kind_of

    server = ChatServer(
        lambda payload: "Hmm, it is hard to say." if kind_of(payload["messages"]) == "judge" else "No."
    )
    out = tmp_path / "judge.json"
    argv = ["calibrate", "--env", "HarnessPlanning-v0", "--probes", "12", "--out", str(out), "--holdout", "0"]
    argv += ["--executor", "openai", "--model", "m", "--base-url", server.base_url, "--retries", "0"]
    try:
        with pytest.raises(SystemExit) as stop:
            main([*argv, "--concurrency", "4", "--quiet"])
    finally:
        server.close()
    message = str(stop.value)
    assert "\n" not in message and "unmeasured, every probe of them went unanswered" in message
    assert "HarnessPlanning-v0 judge_tpr" in message and "HarnessPlanning-v0 p_correct[hard]" in message
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    parameters = data["calibration"]["HarnessPlanning-v0"]["parameters"]
    assert not [name for name, entry in parameters.items() if entry["source"] == "measured"]
    default = executor_profile("default").domain("planning")
    for name in ("judge_tpr", "judge_fpr"):
        entry = parameters[name]
        assert entry["no_answer_rate"] == 1.0 and entry["probes"] == 0
        assert entry["value"] is None and entry["low"] is None  # no estimate, no interval
        assert entry["source"] == "unmeasured: all 12 probes went unanswered (value from default)"
        assert data["domains"]["planning"]["mechanism"][name] == getattr(default.mechanism, name)
        line = next(line for line in printed.splitlines() if line.strip().startswith(name))
        assert "100.0%" in line and "unmeasured" in line
    # drafts that never parse measure no p_correct of 0: the base value stays
    assert parameters["p_correct[standard]"]["no_answer_rate"] == 1.0
    assert parameters["p_correct[standard]"]["source"].startswith("unmeasured")
    assert data["domains"]["planning"]["draft"]["p_correct"]["easy"] == default.draft.p_correct["easy"]
    assert "executor m @" in printed and "152 parse failures" in printed  # the spend summary


@pytest.mark.usefixtures("loopback_llm_env")
def test_p_correct_probes_are_stratified_by_difficulty():
    """Each difficulty gets ``probes`` draft probes, however few tasks of it the split holds."""
    profile = _known("planning", DraftParams({"easy": 0.3, "standard": 0.15, "hard": 0.05}, 0.25))
    _, estimates = calibrate_env("HarnessPlanning-v0", executor_profile=profile, probes=10, seed=0)
    assert [estimates[f"p_correct[{d}]"].n for d in ("easy", "standard", "hard")] == [10, 10, 10]


@pytest.mark.usefixtures("loopback_llm_env")
def test_an_endpoint_failure_stops_calibrate_in_one_line_and_the_rerun_resumes(tmp_path, capsys):
    """The endpoint goes away part way (its deadline passes): one line naming the checkpoint; the same
    command rerun with the endpoint back asks only what was missing and writes the same profile as a
    run that never stopped."""
    from test_llm_executor import ChatServer, Reply

    calls = []

    def respond(payload: dict):
        calls.append(1)
        if failing and len(calls) > 30:
            return Reply("the server is restarting", status=503)
        return "PASS" if "PASS" in payload["messages"][-1]["content"][-600:] else "No."

    failing = True
    server = ChatServer(respond)
    argv = ["calibrate", "--env", "HarnessPlanning-v0", "--probes", "6", "--holdout", "0", "--quiet"]
    argv += ["--executor", "openai", "--model", "m", "--base-url", server.base_url, "--retries", "0"]
    argv += ["--cache", str(tmp_path / "c.sqlite")]
    out = tmp_path / "p.json"
    try:
        with pytest.raises(SystemExit) as stop:
            main([*argv, "--out", str(out)])
        message = str(stop.value)
        assert "\n" not in message and "HTTP 503" in message and "rerun the same command to resume" in message
        assert "p.json.checkpoint.jsonl" in message and not out.exists()
        kept = len((tmp_path / "p.json.checkpoint.jsonl").read_text().splitlines()) - 1
        assert kept >= 25
        failing = False
        asked = len(calls)
        with pytest.raises(SystemExit, match="unmeasured"):  # drafts never parse: unmeasured
            main([*argv, "--out", str(out)])
        resumed_calls = len(calls) - asked
        with pytest.raises(SystemExit, match="unmeasured"):
            main([*argv, "--out", str(tmp_path / "whole.json"), "--cache-mode", "off"])
    finally:
        server.close()
    assert resumed_calls < len(calls) - asked - resumed_calls  # the resume asked less than a whole run
    assert not (tmp_path / "p.json.checkpoint.jsonl").exists()
    assert (
        json.loads(out.read_text())["domains"] == json.loads((tmp_path / "whole.json").read_text())["domains"]
    )


def test_cli_validates_the_fitted_profile_on_held_out_tasks(tmp_path, capsys):
    out = tmp_path / "checked.json"
    assert main(["calibrate", "--env", "HarnessPlanning-v0", "--probes", "30", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "validation, Base G on 20 held-out train tasks: measured" in printed
    check = json.loads(out.read_text())["calibration"]["HarnessPlanning-v0"]["validation"]
    assert check["held_out_tasks"] == 20 and check["measured_episodes"] == 60
    assert check["predicted_episodes"] == 300
    for key in ("measured_base_G", "predicted_base_G"):
        assert check[key]["low"] <= check[key]["value"] <= check[key]["high"]
    line = next(line for line in printed.splitlines() if "validation, Base G" in line)
    verdict = "not consistent" if "not consistent at 95%" in line else "consistent"
    assert line.endswith(f"resampling tasks: {verdict} at 95%") and check["verdict"] == verdict
    d = check["difference"]
    assert (d["low"] <= 0 <= d["high"]) == (verdict == "consistent")


@pytest.mark.usefixtures("loopback_llm_env")
def test_validation_counts_a_greedy_models_repeated_episodes_as_one_draw():
    """At temperature 0 the Base harness plays a task the same way on every seed: those episodes are one
    draw of the task, and the intervals resample tasks."""
    import gymnasium as gym
    from test_llm_executor import ChatServer

    from harness_gym.evaluation.calibrate import validate_env
    from harness_gym.executors import OpenAIConfig

    tasks = [t.task_id for t in gym.make("HarnessPlanning-v0", split="train").unwrapped.tasks[:4]]
    server = ChatServer(
        lambda payload: "PASS" if "PASS" in payload["messages"][-1]["content"][-600:] else "No."
    )
    try:
        config = OpenAIConfig(model="m", base_url=server.base_url, max_retries=0, fail_on_error_rate=False)
        fitted = executor_profile("default").domain("planning")
        check = validate_env("HarnessPlanning-v0", fitted, tasks, executor=config)
    finally:
        server.close()
    assert check["measured_episodes"] == 12 and check["measured_draws"] == 4
    assert check["measured"].n == 4 and check["predicted"].n == 4  # tasks, not episodes
    assert isinstance(check["consistent"], bool)


def test_bad_arguments_are_named_in_one_line(tmp_path):
    import gymnasium as gym

    from harness_gym.evaluation.calibrate import calibrate_domain, holdout_split

    with pytest.raises(ValueError, match="probes must be at least 1, got 0"):
        calibrate_env("HarnessPlanning-v0", probes=0)
    with pytest.raises(ValueError, match="concurrency must be at least 1, got 0"):
        calibrate_env("HarnessPlanning-v0", probes=1, concurrency=0)
    inner = gym.make("HarnessPlanning-v0").unwrapped
    with pytest.raises(ValueError, match="no tasks to calibrate planning on"):
        calibrate_domain(inner.domain, inner.executor, [], probes=1)
    with pytest.raises(ValueError, match=r"held-out fraction must lie in \[0, 1\), got 1.0"):
        holdout_split([], 1.0)
    out = str(tmp_path / "p.json")
    with pytest.raises(SystemExit, match="unknown env id 'HarnessNope-v0'; known: all, Harness"):
        main(["calibrate", "--env", "HarnessNope-v0", "--out", out])
    for flag, value, why in [
        ("--probes", "0", "probes must be"),
        ("--holdout", "1.5", "the held-out fraction"),
    ]:
        with pytest.raises(SystemExit, match=f"^harness-gym calibrate: {why}"):
            main(["calibrate", "--env", "HarnessPlanning-v0", flag, value, "--out", out])
    assert not (tmp_path / "p.json").exists()
