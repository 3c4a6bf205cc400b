"""A real-LLM run against a loopback server that misbehaves the way real servers do.

Replies of every shape (a reasoning model's empty content with ``reasoning_content`` cut at the length
limit, ``tool_calls`` instead of text, a refusal, no choice at all) are per-step outcomes, counted by
kind; transient faults (HTTP 500, 429 with ``Retry-After``, a malformed body, a 10 s outage of the whole
server) are waited out. Every run ends with status 0, no episode is lost, and a collection stopped half
way and resumed equals one that ran through.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from conftest import require
from test_llm_executor import kind_of, planning_replies

from harness_gym.cli.main import main

pytestmark = pytest.mark.usefixtures("loopback_llm_env")

ENV = "HarnessPlanning-v0"
OUTAGE_S = 10.0


def shape_of(payload: dict) -> str:
    """The reply's shape, from the request alone (so it never depends on arrival order)."""
    digest = int(hashlib.sha256(json.dumps(payload["messages"]).encode()).hexdigest(), 16)
    if kind_of(payload["messages"]) == "judge":
        return "text"
    return ("reasoning", "tool_call", "refusal", "no_choice", "text", "text", "text")[digest % 7]


def body_for(payload: dict) -> dict:
    usage = {"prompt_tokens": 50, "completion_tokens": 10}
    shape = shape_of(payload)
    if shape == "no_choice":
        return {"choices": [], "usage": usage}
    message: dict = {"role": "assistant", "content": planning_replies(payload)}
    finish = "stop"
    if shape == "reasoning":  # ran out of tokens while thinking
        message = {"role": "assistant", "content": "", "reasoning_content": "First, the blocks on the table"}
        finish = "length"
    elif shape == "tool_call":
        call = {"id": "1", "type": "function", "function": {"name": "plan", "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    elif shape == "refusal":
        message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}


class FaultyServer:
    """``/v1/chat/completions`` on a fixed loopback port: every 5th request fails once (HTTP 500, 429 with
    Retry-After, or a malformed body, in turn), and ``outage()`` takes the whole server down for a while
    and brings it back on the same port."""

    def __init__(self, port: int = 0) -> None:
        self.count = 0
        self.faults: list[str] = []
        self.lock = threading.Lock()
        self.down_after: int | None = None
        self.down_for = OUTAGE_S
        self.port = port
        self._start()

    def _start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.count += 1
                    n = server.count
                fault = ("500", "429", "malformed")[(n // 5) % 3] if n % 5 == 0 else None
                status, headers, body = 200, {}, json.dumps(body_for(payload)).encode()
                if fault is not None:
                    server.faults.append(fault)
                if fault == "500":
                    status, body = 500, b'{"error": "internal"}'
                elif fault == "429":
                    status, headers, body = 429, {"Retry-After": "1"}, b'{"error": "slow down"}'
                elif fault == "malformed":
                    body = b'{"choices": [{"message": '
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)
                if server.down_after is not None and n == server.down_after:
                    threading.Thread(target=server.outage, daemon=True).start()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def outage(self) -> None:
        self.stop()
        self.outages = getattr(self, "outages", 0) + 1
        time.sleep(self.down_for)
        self._start()


def _config(tmp_path: Path, name: str, base_url: str) -> Path:
    """Every executor setting in one file (backoff short, so the test waits little beyond the outage)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[executor]\nmodel = "faulty"\nbase_url = "{base_url}"\ncache = "{tmp_path / name}.sqlite"\n'
        "backoff_s = 0.05\nmax_backoff_s = 0.5\ntemperature = 0.7\n"
    )
    return path


def _collect(tmp_path: Path, config: Path, dataset: str, *extra: str) -> int:
    argv = ["collect", "--env", ENV, "--episodes", "16", "--dataset-id", f"harness/planning/{dataset}-v0"]
    argv += ["--split", "eval", "--root", str(tmp_path / "datasets"), "--quiet", "--concurrency", "4"]
    return main([*argv, "--config", str(config), *extra])


def _episodes(tmp_path: Path, dataset: str) -> list:
    import minari

    path = tmp_path / "datasets" / "harness" / "planning" / f"{dataset}-v0"
    return list(minari.load_dataset(str(path)).iterate_episodes())


def test_every_reply_shape_and_transient_fault_is_survived_counted_and_resumable(tmp_path, capsys):
    require("minari")
    server = FaultyServer()
    server.down_after = 12  # the whole server goes away for OUTAGE_S after its 12th request
    try:
        start = time.monotonic()
        assert _collect(tmp_path, _config(tmp_path, "through", server.base_url), "through") == 0
        took = time.monotonic() - start
        printed = capsys.readouterr().out
    finally:
        server.stop()
    assert getattr(server, "outages", 0) == 1 and took >= OUTAGE_S  # the outage was waited out
    assert {"500", "429", "malformed"} <= set(server.faults)
    through = _episodes(tmp_path, "through")
    assert len(through) == 16  # nothing lost
    line = next(line for line in printed.splitlines() if line.startswith("executor replies without"))
    counts = {name: int(n) for n, name in (part.split(" ", 1) for part in line.split(": ", 1)[1].split(", "))}
    for kind in ("truncations", "tool calls", "refusals", "no content"):
        assert counts[kind] > 0, (kind, line)  # each shape came back and was counted as its kind
    errors = [int(e) for ep in through for e in ep.infos["llm_error"] if e >= 0]
    assert len(set(errors)) >= 4  # the dataset's audit arrays name the kinds too

    # the same collection, stopped half way by a server that stays down past the call's deadline, then
    # resumed with the server back: identical to the one that ran through
    server = FaultyServer()
    # 4 episodes in flight share the requests before the outage: 40 leave room for some to finish (20 did
    # not always, when threads interleaved their calls evenly), the 16 need about 90
    server.down_after, server.down_for = 40, 3.0
    config = _config(tmp_path, "resumed", server.base_url)
    try:
        with pytest.raises(SystemExit, match="the run stopped"):
            _collect(tmp_path, config, "resumed", "--deadline", "1", "--retries", "50")
        checkpoints = list((tmp_path / "datasets" / ".harness-collect").rglob("episode-*.npz"))
        assert 0 < len(checkpoints) < 16
        time.sleep(server.down_for + 0.5)  # back up
        assert _collect(tmp_path, config, "resumed", "--request-timeout", "30") == 0
    finally:
        server.stop()
    resumed = _episodes(tmp_path, "resumed")
    assert len(resumed) == 16
    for a, b in zip(through, resumed, strict=True):
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        np.testing.assert_array_equal(a.infos["llm_cache_key"], b.infos["llm_cache_key"])
        np.testing.assert_array_equal(a.infos["llm_error"], b.infos["llm_error"])


# -- context overflow, duplicate calls, error replies, guards, pre-flight ------------------------------
CONTEXT_400 = {
    "vllm": {
        "object": "error",
        "message": "This model's maximum context length is 2048 tokens. However, you requested 2600 tokens "
        "(1576 in the messages, 1024 in the completion). Please reduce the length of the messages or "
        "completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    "sglang": {
        "object": "error",
        "message": "The input (2600 tokens) is longer than the model's context length (2048 tokens).",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    "openai": {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted "
            "in 9000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "ollama": {
        "error": {
            "message": "the input length exceeds the context length",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    },
}
"""HTTP 400 bodies of servers refusing a prompt longer than the model's context, each in its wording."""


def digest_of(payload: dict) -> int:
    return int(hashlib.sha256(json.dumps(payload["messages"]).encode()).hexdigest(), 16)


class ModeServer:
    """A loopback OpenAI-compatible server that answers ``planning_replies`` except where a mode says
    otherwise, and logs every request: ``overflow`` (a vendor's wording) refuses every ``overflow_every``-th
    prompt (by its hash, so a prompt is refused every time) with HTTP 400; ``retry_after`` answers
    every request with HTTP 429 and that ``Retry-After``; ``reply(payload)`` may
    return a whole body (``choices: []``, a refusal, ...) or None; ``models`` is what ``GET /v1/models``
    lists; ``delay_s`` holds each reply back (so concurrent identical requests overlap)."""

    def __init__(self, models: tuple[str, ...] = ("faulty",)) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.overflow: str | None = None
        self.overflow_every = 5
        self.reply = lambda payload: None
        self.models = models
        self.delay_s = 0.0
        self.retry_after: int | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(
                    200, {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]}
                )

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(payload)
                if server.delay_s:
                    time.sleep(server.delay_s)
                if server.retry_after is not None:  # rate limited: come back in that many seconds
                    headers = {"Retry-After": str(server.retry_after)}
                    return self._send(429, {"error": {"message": "rate limit"}}, headers)
                judge = kind_of(payload["messages"]) == "judge"
                if server.overflow and not judge and digest_of(payload) % server.overflow_every == 0:
                    return self._send(400, CONTEXT_400[server.overflow])
                body = server.reply(payload)
                if body is None:
                    message = {"role": "assistant", "content": planning_replies(payload)}
                    body = {"choices": [{"message": message, "finish_reason": "stop"}]}
                self._send(200, {**body, "usage": {"prompt_tokens": 50, "completion_tokens": 10}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def modes():
    servers: list[ModeServer] = []

    def start(**kwargs) -> ModeServer:
        servers.append(ModeServer(**kwargs))
        return servers[-1]

    yield start
    for srv in servers:
        srv.close()


def _llm(base_url: str, *extra: str) -> list[str]:
    return ["--executor", "openai", "--model", "faulty", "--base-url", base_url, *extra]


@pytest.mark.parametrize("vendor", sorted(CONTEXT_400))
def test_a_context_overflow_is_a_counted_step_error_and_the_run_goes_on(modes, vendor, capsys):
    srv = modes()
    srv.overflow, srv.overflow_every = vendor, 1  # every draft and revision is refused
    argv = ["run", "--env", ENV, "--episodes", "3", "--quiet", "--episodes-out", "/dev/null"]
    assert main([*argv, *_llm(srv.base_url)]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("executor replies without"))
    truncations = int(line.split(", ")[1].split(" ")[0])
    assert truncations > 0 and f"({truncations} of them context overflows)" in line
    assert "episodes=3" in out  # every episode finished


def test_a_context_overflow_reaches_the_step_record(modes):
    import gymnasium as gym

    from harness_gym.evaluation.rollout import run_episode
    from harness_gym.executors import OpenAIConfig
    from harness_gym.policies.scripted import make_policy

    srv = modes()
    srv.overflow, srv.overflow_every = "vllm", 1
    env = gym.make(ENV, split="eval", executor=OpenAIConfig(model="faulty", base_url=srv.base_url))
    info = run_episode(env, make_policy("base", ENV), seed=0)
    errors = [s["executor_io"]["error"] for s in info["trajectory"]["steps"] if "executor_io" in s]
    overflow = [e for e in errors if e and e.startswith("context overflow: This model's maximum context")]
    assert overflow and info["usage"]["truncations"] >= len(overflow)
    assert info["termination_reason"] == "submit"  # the harness went on and submitted


def _collect_argv(root: Path, config: Path, dataset: str) -> list[str]:
    return [
        "collect",
        "--env",
        ENV,
        "--episodes",
        "20",
        "--dataset-id",
        f"harness/planning/{dataset}-v0",
        "--split",
        "eval",
        "--root",
        str(root),
        "--quiet",
        "--config",
        str(config),
    ]


def test_a_collection_with_context_overflows_finishes_and_resumes_after_kill_9_as_a_clean_run(
    modes, tmp_path
):
    """1 prompt in 5 is refused as too long for the context: every episode is collected, and a
    collection killed with SIGKILL half way then resumed equals one that ran through."""
    require("minari")
    import os
    import signal
    import subprocess
    import sys

    from harness_gym.datasets.collect import CollectConfig, checkpoint_dir

    srv = modes()
    srv.overflow = "openai"
    root = tmp_path / "datasets"

    def config(name: str) -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(
            f'model = "faulty"\nbase_url = "{srv.base_url}"\ncache = "{name}.sqlite"\ntemperature = 0.7\n'
        )
        return path

    assert main(_collect_argv(root, config("clean"), "clean")) == 0
    clean = _episodes(tmp_path, "clean")
    assert len(clean) == 20
    assert any(e >= 0 for ep in clean for e in ep.infos["llm_error"])  # overflows were met
    overflows = [p for p in srv.requests if kind_of(p["messages"]) != "judge" and digest_of(p) % 5 == 0]
    assert overflows

    srv.delay_s = 0.05  # slow enough to be killed half way
    cmd = [sys.executable, "-m", "harness_gym.cli", *_collect_argv(root, config("killed"), "killed")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoints = checkpoint_dir(
        CollectConfig(ENV, "mixed", 20, "harness/planning/killed-v0", root=str(root), show_progress=False)
    )
    deadline = time.monotonic() + 300
    while len(list(checkpoints.glob("episode-*.npz"))) < 4 and time.monotonic() < deadline:
        assert proc.poll() is None, "the collection finished before it could be interrupted"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(list(checkpoints.glob("episode-*.npz"))) < 20
    srv.delay_s = 0.0
    assert main(_collect_argv(root, config("killed"), "killed")) == 0
    resumed = _episodes(tmp_path, "killed")
    assert len(resumed) == 20
    for a, b in zip(clean, resumed, strict=True):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        assert sorted(a.infos) == sorted(b.infos)
        for name in a.infos:  # the audit arrays too: cache keys, errors (overflows), tokens
            np.testing.assert_array_equal(a.infos[name], b.infos[name])


def test_evaluate_at_temperature_zero_sends_each_distinct_prompt_once(modes, tmp_path, capsys):
    """``--concurrency 16``: the protocol's copies of an episode are in flight together; identical
    requests share one call, so the server sees each distinct prompt exactly once."""
    srv = modes()
    srv.delay_s = 0.02
    argv = ["evaluate", "--env", ENV, "--policy", "base", "--concurrency", "16", "--quiet"]
    cache = str(tmp_path / "eval.sqlite")
    assert main([*argv, *_llm(srv.base_url, "--cache", cache)]) == 0
    prompts = [json.dumps(p["messages"], sort_keys=True) for p in srv.requests]
    assert len(prompts) == len(set(prompts))
    out = capsys.readouterr().out
    assert "shared with an identical call in flight" in out
    line = next(line for line in out.splitlines() if line.startswith("executor faulty @"))
    assert f"{len(prompts)} sent" in line
    # the copies are no independent draws: the score's interval resamples whole tasks, and says so
    score = next(line for line in out.splitlines() if "normalised score" in line)
    assert "95% interval resampling whole tasks" in score


def test_the_score_interval_resamples_tasks_only_when_episodes_repeat_calls():
    from harness_gym.evaluation.protocol import EpisodeResult, clustered_mean_ci, mean_ci
    from harness_gym.evaluation.reference_scores import normalized_score
    from harness_gym.evaluation.scoring import _score_interval

    def episode(task: str, G: float, trace: str | None) -> EpisodeResult:
        return EpisodeResult(ENV, "p", 0, task, 0, 0, G, 0.0, (), (), 3, "submit", trace)

    rng = np.random.default_rng(0)
    copies = [episode(f"t{t}", g, f"x{t}") for t in range(10) for g in [float(rng.integers(2))] * 3]
    interval, unit = _score_interval(ENV, copies)
    scores = [normalized_score(ENV, e.G) for e in copies]
    assert unit == "tasks" and interval == clustered_mean_ci(scores, [e.task_id for e in copies], rng=0)
    assert interval.high - interval.low > mean_ci(scores, rng=0).high - mean_ci(scores, rng=0).low
    distinct = [episode(e.task_id, e.G, f"{e.trace}-{i}") for i, e in enumerate(copies)]
    assert _score_interval(ENV, distinct) == (mean_ci(scores, rng=0), "episodes")


def _steps(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    return [s for line in lines for s in json.loads(line)["trajectory"]["steps"]]


def test_a_recorded_error_reply_is_replayed_as_an_error_and_reask_asks_again(modes, tmp_path, capsys):
    """``choices: []`` is recorded; a rerun serves it as the recorded error it was (never an answer);
    ``--cache-mode reask`` asks it again and keeps the new reply."""
    srv = modes()
    srv.reply = lambda payload: {"choices": []}
    cache = str(tmp_path / "errors.sqlite")
    argv = ["run", "--env", ENV, "--episodes", "2", "--quiet", "--no-fail-on-error-rate"]
    argv += ["--episodes-out", str(tmp_path / "first.jsonl")]
    assert main([*argv, *_llm(srv.base_url, "--cache", cache)]) == 0
    sent = len(srv.requests)
    assert sent > 0
    srv.reply = lambda payload: None  # the server recovered
    argv[-1] = str(tmp_path / "again.jsonl")
    assert main([*argv, *_llm(srv.base_url, "--cache", cache)]) == 0
    assert len(srv.requests) == sent  # all from the cache ...
    steps = _steps(tmp_path / "again.jsonl")
    ios = [s["executor_io"] for s in steps if "executor_io" in s]
    assert ios and all(io["recorded_error"] and io["error"].startswith("no content") for io in ios)
    capsys.readouterr()
    assert main(["replay", cache]) == 0  # replay shows them as the recorded errors they are
    assert f"{sent} recorded error replies" in capsys.readouterr().out
    argv[-1] = str(tmp_path / "reasked.jsonl")
    assert main([*argv, *_llm(srv.base_url, "--cache", cache, "--cache-mode", "reask")]) == 0
    assert len(srv.requests) > sent  # ... until asked again
    steps = _steps(tmp_path / "reasked.jsonl")
    assert any(s["executor_io"]["error"] is None for s in steps if "executor_io" in s)


@pytest.mark.parametrize(
    ("reply", "shape", "flag"),
    [
        (
            {"choices": [{"message": {"content": None, "refusal": "No."}, "finish_reason": "stop"}]},
            "refusals",
            "",
        ),
        (
            {
                "choices": [
                    {"message": {"content": "", "reasoning_content": "Hmm"}, "finish_reason": "length"}
                ]
            },
            "truncations",
            "--max-tokens",
        ),
    ],
)
def test_nearly_all_first_replies_failing_one_way_stop_the_run_in_one_line(modes, reply, shape, flag):
    srv = modes()
    srv.reply = lambda payload: reply
    argv = ["run", "--env", ENV, "--episodes", "40", "--quiet"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, *_llm(srv.base_url)])
    message = str(stop.value)
    assert "\n" not in message and f"of the first 20 replies were {shape.replace('_', ' ')}" in message
    assert flag in message and "--no-fail-on-error-rate" in message
    assert len(srv.requests) < 40  # stopped early, not after spending every call
    assert main([*argv, "--episodes", "3", "--no-fail-on-error-rate", *_llm(srv.base_url)]) == 0


def test_spend_guards_stop_cleanly_and_the_collection_resumes(modes, tmp_path):
    require("minari")
    srv = modes()
    argv = ["run", "--env", ENV, "--episodes", "10", "--quiet"]
    with pytest.raises(SystemExit, match=r"spend guard reached: 4 calls sent, the --max-calls limit of 4"):
        main([*argv, *_llm(srv.base_url, "--max-calls", "4")])
    assert len(srv.requests) == 4
    with pytest.raises(SystemExit, match=r"--max-tokens-total limit of 100"):
        main([*argv, *_llm(srv.base_url, "--max-tokens-total", "100")])
    assert len(srv.requests) == 4 + 2  # 60 tokens a call
    price = ["--price-in", "1000", "--price-out", "1000"]  # $0.06 a call
    with pytest.raises(SystemExit, match=r"\$0.1200 spent, the --max-spend limit of \$0.1"):
        main([*argv, *_llm(srv.base_url, *price, "--max-spend", "0.1")])

    config = tmp_path / "guarded.toml"
    config.write_text(
        f'model = "faulty"\nbase_url = "{srv.base_url}"\ntemperature = 0.7\ncache = "g.sqlite"\n'
    )
    collect = _collect_argv(tmp_path / "datasets", config, "guarded")
    with pytest.raises(SystemExit, match="spend guard reached"):
        main([*collect, "--max-calls", "8"])
    assert main(collect) == 0  # resumes where the guard stopped it
    assert len(_episodes(tmp_path, "guarded")) == 20


def test_preflight_names_an_unknown_model_or_an_unreachable_url_in_one_line(modes):
    import socket

    srv = modes(models=("qwen3-8b",))
    argv = ["run", "--env", ENV, "--episodes", "1", "--quiet", "--executor", "openai"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--model", "qwen3-8B", "--base-url", srv.base_url])
    assert str(stop.value).count("\n") == 0 and "model 'qwen3-8B' is not served" in str(stop.value)
    assert srv.requests == []
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        SystemExit, match=r"cannot reach the LLM endpoint http://127.0.0.1:\d+/v1 \(Connection"
    ):
        main([*argv, "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1"])
    # skippable: the run then meets the model name at its first call
    srv.models = ("qwen3-8B",)
    assert main([*argv, "--model", "qwen3-8B", "--base-url", srv.base_url, "--no-preflight"]) == 0


def test_settings_file_paths_and_the_sdks_environment(modes, tmp_path, monkeypatch):
    """A relative cache path in run.toml is beside the file, whatever the working directory; the OpenAI
    SDK's $OPENAI_BASE_URL serves when nothing else names the endpoint."""
    srv = modes()
    sub = tmp_path / "conf"
    sub.mkdir()
    (sub / "run.toml").write_text('[executor]\nmodel = "faulty"\ncache = "cache.sqlite"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
    assert main(["run", "--env", ENV, "--episodes", "1", "--quiet", "--config", str(sub / "run.toml")]) == 0
    assert (sub / "cache.sqlite").is_file() and not (tmp_path / "cache.sqlite").exists()
    assert srv.requests


def test_a_collection_resumes_with_a_changed_max_tokens_and_records_it(modes, tmp_path, capsys):
    """Following the hint of truncated replies (a larger --max-tokens) keeps the finished episodes; any
    other changed setting is still refused."""
    require("minari")
    import minari

    srv = modes()
    config = tmp_path / "budget.toml"
    config.write_text(
        f'model = "faulty"\nbase_url = "{srv.base_url}"\ntemperature = 0.7\ncache = "b.sqlite"\n'
    )
    collect = _collect_argv(tmp_path / "datasets", config, "budget")
    with pytest.raises(SystemExit, match="spend guard reached"):
        main([*collect, "--max-tokens", "512", "--max-calls", "8"])
    with pytest.raises(SystemExit, match="temperature"):
        main([*collect, "--max-tokens", "900", "--temperature", "0.5"])
    assert main([*collect, "--max-tokens", "900"]) == 0
    assert "resuming 'harness/planning/budget-v0' with max_tokens 900 (was 512)" in capsys.readouterr().out
    meta = minari.load_dataset(
        str(tmp_path / "datasets" / "harness" / "planning" / "budget-v0")
    ).storage.metadata
    (change,) = json.loads(meta["harness_max_tokens_changes"])
    assert change["from"] == 512 and change["to"] == 900 and 0 < change["episodes_done"] < 20
    assert {p["max_tokens"] for p in srv.requests} == {512, 900}


def test_a_retry_after_past_the_deadline_ends_the_run_at_once_naming_it(modes):
    """HTTP 429 with ``Retry-After: 45`` under ``--deadline 30``: no wait that cannot end in time, one
    line saying why (within the deadline, the client waits 45 s as asked: test_openai_client)."""
    srv = modes()
    srv.retry_after = 45
    argv = ["run", "--env", ENV, "--episodes", "1", "--quiet", "--deadline", "30"]
    start = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        main([*argv, *_llm(srv.base_url)])
    assert "\n" not in str(stop.value) and "retry after 45s, past the call's deadline of 30s" in str(
        stop.value
    )
    assert len(srv.requests) == 1
    assert time.monotonic() - start < 30  # it did not sit out the deadline
