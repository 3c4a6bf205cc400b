"""`harness-gym view`: a static page of episodes, checked as HTML and in a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import require, unavailable

from harness_gym.bench.viewer import ViewError, load, render_html, write_infos, write_view
from harness_gym.cli.main import main
from harness_gym.core.actions import Action
from harness_gym.datasets.collect import CollectConfig, collect

PLANNING = "HarnessPlanning-v0"
SEQUENCE = (Action.OBSERVE, Action.DRAFT, Action.CHECK, Action.REVISE, Action.CHECK, Action.SUBMIT)


def _final_info(seed: int, actions=SEQUENCE) -> dict:
    env = gym.make(PLANNING)
    env.reset(seed=seed)
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info
    raise AssertionError("the episode did not end")


@pytest.fixture
def episodes_file(tmp_path: Path) -> Path:
    """Two episodes; the draft step of the first carries an executor_io record (the chat-LLM contract)."""
    infos = [_final_info(0), _final_info(1, (Action.OBSERVE, Action.SUBMIT))]
    # the page shows the recorded events as they are: mark two fired, so the page has something to show
    for name in ("CheckBeforeSubmit", "StopWhenSufficient"):
        infos[0]["hms"][name] = {"fired": True, "applicable": True}
    infos[0]["trajectory"]["steps"][1]["executor_io"] = {
        "messages": [{"role": "system", "content": "You plan."}, {"role": "user", "content": "Plan <it>."}],
        "reply": "1. pick(a) <script>alert(1)</script>",
        "finish_reason": "stop",
        "cache_key": "0123456789abcdef",
        "error": None,
    }
    path = tmp_path / "episodes.jsonl"
    write_infos(infos, path)
    return path


def test_episodes_file_page(episodes_file: Path) -> None:
    settings = load(str(episodes_file))
    assert [len(s.episodes) for s in settings] == [2]
    page = render_html(settings, "t")
    assert page.count('class="episode"') == 2
    assert len(re.findall(r'<li class="step action-CHECK"', page)) == 2
    assert len(re.findall(r'<li class="step action-SUBMIT"', page)) == 2
    assert page.count('<details class="executor-io">') == 1
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page  # escaped
    info = json.loads(episodes_file.read_text().splitlines()[0])
    assert f"G = {info['G']:.3f}" in page
    fired = [name for name, event in info["hms"].items() if event["fired"]]
    assert all(f'<span class="event">{name}</span>' in page for name in fired)
    # what the page shows for these two known episodes: their steps in order, their headers, their events
    shown = re.findall(r'<li class="step action-(\w+)"', page)
    assert shown == [a.name for a in SEQUENCE] + ["OBSERVE", "SUBMIT"]
    second = json.loads(episodes_file.read_text().splitlines()[1])
    events = [name for record in (info, second) for name, event in record["hms"].items() if event["fired"]]
    assert {"CheckBeforeSubmit", "StopWhenSufficient"} <= set(fired)  # the fixture sets them
    assert re.findall(r'<span class="event">(\w+)</span>', page) == events
    for i, record in enumerate((info, second)):
        head = (
            f'<b>episode {i}</b><span>{record["task_id"]}</span><span class="g">G = {record["G"]:.3f}</span>'
        )
        assert head in page
    assert "http" not in page.split("</style>")[0]  # no external assets


def test_dataset_and_results_directory(tmp_path: Path) -> None:
    datasets = tmp_path / "results" / "datasets"
    collect(CollectConfig(PLANNING, "mixed", 6, "harness/planning/bench-mixed-v0", root=str(datasets),
                          show_progress=False))  # fmt: skip
    settings = load("harness/planning/bench-mixed-v0", root=datasets, limit=4)
    assert len(settings[0].episodes) == 4 and settings[0].left_out == 2
    steps = settings[0].episodes[0].steps
    assert steps[-1]["action"] in {"SUBMIT"} or len(steps) == 12
    policies = {"base": {"G": 0.52}, "awr": {"G": 0.61, "delta_G": 0.05}}
    results = {"settings": {PLANNING: {"compare": {"policies": policies}}}}
    (tmp_path / "results" / "results.json").write_text(json.dumps(results))
    page_path = write_view(tmp_path / "results", tmp_path / "view.html")
    page = page_path.read_text()
    assert page.count('<section class="setting">') == 1
    assert "<th>delta_G</th>" in page and "<td>awr</td><td>0.610</td><td>0.050</td>" in page
    assert "bench-mixed-v0 episode 0 (base)" in page
    assert page.count('class="episode"') == 6


def test_bad_targets_are_named(tmp_path: Path) -> None:
    with pytest.raises(ViewError, match=r"holds no results\.json"):
        load(str(tmp_path))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"G": 1}\n')
    with pytest.raises(ViewError, match=re.escape(f"{bad} line 1: not an episode's final info")):
        load(str(bad))
    with pytest.raises(SystemExit, match="no dataset 'harness/planning/none-v0'"):
        main(["view", "harness/planning/none-v0", "--root", str(tmp_path)])


# -- in a real browser -----------------------------------------------------------------------------
def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        unavailable("no chromium on PATH (Debian package 'chromium')")
    return found


def _chromium_run(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}"]  # fmt: skip
    return subprocess.run([browser, *flags, *args], capture_output=True, text=True, timeout=180)


def test_page_renders_in_headless_chromium(episodes_file: Path, tmp_path: Path) -> None:
    browser = _chromium()
    from PIL import Image

    page = tmp_path / "view.html"
    assert main(["view", str(episodes_file), "--out", str(page)]) == 0
    shot = tmp_path / "view.png"
    run = _chromium_run(browser, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1000,700",
                        page.as_uri())  # fmt: skip
    assert shot.is_file(), run.stderr[-2000:]
    image = np.asarray(Image.open(shot).convert("RGB"), dtype=float)
    assert image.shape == (700, 1000, 3)
    assert image.std() > 10  # not blank
    ink = (image.sum(axis=2) < 600).mean()
    assert 0.005 < ink < 0.6  # text and chips on a white page
    green = ((image[:, :, 1] > 130) & (image[:, :, 0] < 80) & (image[:, :, 2] < 110)).sum()
    assert green > 200  # the CHECK chips are drawn in their colour

    dom = _chromium_run(browser, tmp_path / "profile", "--dump-dom", page.as_uri()).stdout
    assert dom.count('class="episode"') == 2
    assert len(re.findall(r'<li class="step action-CHECK"', dom)) == 2
    assert len(re.findall(r'<li class="step action-REVISE"', dom)) == 1
    assert '<details class="executor-io">' in dom


def test_run_episodes_out_then_view(tmp_path: Path, capsys) -> None:
    episodes = tmp_path / "run.jsonl"
    args = ["run", "--env", PLANNING, "--episodes", "3", "--policy", "exploratory"]
    assert main([*args, "--episodes-out", str(episodes)]) == 0
    lines = episodes.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["trajectory"]["env_id"] == PLANNING for line in lines)
    assert main(["view", str(episodes), "--out", str(tmp_path / "run.html")]) == 0
    page = (tmp_path / "run.html").read_text()
    assert page.count('class="episode"') == 3 and "what happened" in page
    assert f"wrote {tmp_path / 'run.html'}" in capsys.readouterr().out


# -- marks, rubric, calls, filters -----------------------------------------------------------------
def _chat_llm_episodes(tmp_path: Path) -> Path:
    """Two episodes of a chat-LLM run: a DRAFT whose reply failed to parse, a truncated one, a passing
    and a failing CHECK; one episode's G high, the other's low."""
    low = _final_info(0)
    high = _final_info(1)
    steps = low["trajectory"]["steps"]  # OBSERVE, DRAFT, CHECK, REVISE, CHECK, SUBMIT
    io = {"messages": [{"role": "user", "content": "Plan."}], "reply": "no plan here", "model": "tiny-llm",
          "cache_key": "ab" * 32, "cached": False, "latency_s": 1.25, "prompt_tokens": 120,
          "completion_tokens": 7, "cost_usd": 0.0002, "finish_reason": "stop", "reasoning_content": "hmm",
          "error": "parse failure: no plan lines"}  # fmt: skip
    steps[1]["executor_io"] = io
    steps[3]["executor_io"] = {**io, "error": "truncated reply: cut off at max_tokens=16", "cached": True}
    steps[2]["failure"], steps[4]["failure"] = False, True
    low["G"], high["G"] = 0.1, 0.9
    low["trajectory"]["episode_id"] = f"{PLANNING}/t/seed=0/base"
    high["trajectory"]["episode_id"] = f"{PLANNING}/t/seed=1/expert"
    path = tmp_path / "llm.jsonl"
    write_infos([low, high], path)
    return path


def test_chips_rubric_calls_and_filters(tmp_path: Path) -> None:
    page = render_html(load(str(_chat_llm_episodes(tmp_path))), "t")
    assert re.search(r'<li class="step action-DRAFT"[^>]*data-mark="parse"', page)
    assert re.search(r'<li class="step action-REVISE"[^>]*data-mark="truncated"', page)
    assert len(re.findall(r'<li class="step action-CHECK"[^>]*data-mark="pass"', page)) >= 1
    assert len(re.findall(r'<li class="step action-CHECK"[^>]*data-mark="fail"', page)) >= 1
    assert page.count('<table class="rubric">') == 2  # the rubric of each episode
    assert "tiny-llm, sent, 1.25s, 120+7 tokens" in page and "tiny-llm, cache hit" in page
    assert "<summary>reasoning</summary>" in page
    assert 'data-policy="base"' in page and 'data-policy="expert"' in page
    assert '<option value="expert">expert</option>' in page and 'id="f-gmin"' in page
    assert page.count("<script") == 1  # the page's own filter script, nothing from the episodes


def test_filters_apply_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    page = tmp_path / "llm.html"
    assert main(["view", str(_chat_llm_episodes(tmp_path)), "--out", str(page)]) == 0
    shown = _chromium_run(browser, tmp_path / "profile", "--dump-dom", page.as_uri()).stdout
    assert shown.count('class="episode"') == 2 and "display: none" not in shown
    assert '<span id="shown">2</span>' in shown
    for fragment in ("#policy=expert", "#gmin=0.5", "#q=seed%3D1"):
        dom = _chromium_run(browser, tmp_path / "profile", "--dump-dom", page.as_uri() + fragment).stdout
        assert dom.count('style="display: none;"') == 1, fragment  # the low-G base episode is hidden
        assert '<span id="shown">1</span>' in dom, fragment
        hidden = dom.split('style="display: none;"')[0].rsplit('class="episode"', 1)[1]
        assert 'data-policy="base"' in hidden


@pytest.mark.usefixtures("loopback_llm_env")
def test_a_chat_llm_dataset_page_shows_prompts_and_replies(tmp_path: Path) -> None:
    require("minari")
    from test_llm_executor import ChatServer, planning_replies

    from harness_gym.executors.openai_executor import OpenAIConfig

    server = ChatServer(planning_replies)
    cache = tmp_path / "c.sqlite"
    try:
        config = OpenAIConfig(model="m", base_url=server.base_url, cache=str(cache))
        collect(CollectConfig(PLANNING, "mixed", 4, "harness/planning/llm-v0", root=str(tmp_path / "d"),
                              executor=config, show_progress=False))  # fmt: skip
    finally:
        server.close()
    page = render_html(load("harness/planning/llm-v0", root=tmp_path / "d"), "t")
    assert page.count('<details class="executor-io">') >= 4
    assert "prompt messages" in page and "## Task" in page  # the prompt, from the response cache
    assert "sent" in page and "s, 100+20 tokens" in page  # latency and tokens from the audit file
    cache.rename(tmp_path / "moved.sqlite")  # without the cache: the calls, but no prompt
    page = render_html(load("harness/planning/llm-v0", root=tmp_path / "d"), "t")
    assert '<details class="executor-io">' in page and "prompt messages" not in page
    assert "its prompt and reply are in the response cache, by key" in page
