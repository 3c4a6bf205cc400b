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
    pytest.importorskip("minari")
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
    server.down_after, server.down_for = 20, 3.0
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
