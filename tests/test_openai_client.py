"""OpenAIChatClient against a real loopback HTTP server serving scripted responses."""

from __future__ import annotations

import email.utils
import json
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness_gym.executors.openai_client import (
    DEFAULT_MAX_TOKENS,
    ChatResult,
    ContextOverflowError,
    LLMError,
    OpenAIChatClient,
    preflight,
)

MESSAGES = [{"role": "user", "content": "hi"}]


def ok_body(text: str = "hello", usage: dict | None = None) -> bytes:
    data: dict = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
    if usage is not None:
        data["usage"] = usage
    return json.dumps(data).encode()


@dataclass
class Scripted:
    status: int = 200
    body: bytes = field(default_factory=ok_body)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None
    """Sent as it is instead of a response (then the connection is closed): a broken reply."""


class ScriptedServer:
    """A ThreadingHTTPServer on 127.0.0.1 that pops one scripted response per request."""

    def __init__(self) -> None:
        self.script: deque[Scripted] = deque()
        self.default: Scripted | None = None
        self.requests: list[dict] = []
        self.headers_seen: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self.cond = threading.Condition(self.lock)
        self.gate_at: int | None = None  # when set, a request waits until this many are in flight
        self.models: list[str] | None = None  # what GET /v1/models lists (None: no such route)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if server.models is None or self.path != "/v1/models":
                    self.send_error(404)
                    return
                body = json.dumps({"object": "list", "data": [{"id": m} for m in server.models]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                with server.cond:
                    server.requests.append(payload)
                    server.headers_seen.append(dict(self.headers))
                    reply = server.script.popleft() if server.script else server.default
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.cond.notify_all()
                    if server.gate_at is not None:
                        server.cond.wait_for(lambda: server.in_flight >= server.gate_at, timeout=3.0)
                done = False
                try:
                    assert reply is not None, "unscripted request"
                    if reply.delay_s:
                        server.stop.wait(reply.delay_s)
                    # leave the in-flight count before replying: the client holds its slot until it has
                    # read the reply, so the server-side count never over-reports the client's concurrency
                    with server.cond:
                        server.in_flight -= 1
                        done = True
                    if reply.raw is not None:
                        self.wfile.write(reply.raw)
                        self.close_connection = True
                        return
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # client gave up (timeout); nothing to do
                finally:
                    if not done:
                        with server.cond:
                            server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


pytestmark = pytest.mark.usefixtures("loopback_llm_env")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    try:
        yield srv
    finally:
        srv.close()


class RecordingSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def make_client(server: ScriptedServer, **kwargs) -> tuple[OpenAIChatClient, RecordingSleep]:
    sleep = RecordingSleep()
    opts = dict(
        base_url=server.base_url,
        model="test-model",
        timeout_s=2.0,
        max_retries=3,
        backoff_s=0.5,
        max_backoff_s=1.0,
        rng=random.Random(0),
        sleep=sleep,
    )
    opts.update(kwargs)
    return OpenAIChatClient(**opts), sleep


def test_success_with_usage_and_cost(server: ScriptedServer) -> None:
    server.script.append(
        Scripted(
            body=ok_body(
                "the answer", {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500}
            )
        )
    )
    client, sleep = make_client(
        server, api_key="sk-test", price_per_1k_prompt=0.01, price_per_1k_completion=0.03, temperature=0.2
    )
    result = client.chat(MESSAGES, seed=7)
    assert isinstance(result, ChatResult)
    assert result.text == "the answer"
    assert (result.prompt_tokens, result.completion_tokens) == (1200, 300)
    assert result.cost_usd == pytest.approx(1.2 * 0.01 + 0.3 * 0.03)
    assert sleep.calls == []
    [payload] = server.requests
    assert payload["model"] == "test-model"
    assert payload["messages"] == MESSAGES
    assert payload["seed"] == 7
    assert payload["temperature"] == 0.2
    assert payload["max_tokens"] == DEFAULT_MAX_TOKENS  # the same default as OpenAIConfig
    assert server.headers_seen[0]["Authorization"] == "Bearer sk-test"
    assert "sk-test" not in repr(client)


def test_usage_absent_is_zero_and_no_auth_header(server: ScriptedServer) -> None:
    server.script.append(Scripted(body=ok_body("x")))
    client, _ = make_client(server, price_per_1k_prompt=1.0)
    result = client.chat(MESSAGES)
    assert result == ChatResult("x", 0, 0, 0.0)
    assert "seed" not in server.requests[0]
    assert "Authorization" not in server.headers_seen[0]


def test_env_fallback_and_missing_config(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMError, match="HARNESS_GYM_LLM_BASE_URL") as info:
        OpenAIChatClient()
    assert "HARNESS_GYM_LLM_MODEL" in str(info.value)
    monkeypatch.setenv("HARNESS_GYM_LLM_BASE_URL", server.base_url + "/")
    with pytest.raises(LLMError, match="HARNESS_GYM_LLM_MODEL"):
        OpenAIChatClient()
    monkeypatch.setenv("HARNESS_GYM_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    client = OpenAIChatClient(sleep=RecordingSleep())
    assert client.url == server.base_url + "/chat/completions"
    assert client.api_key == "sk-openai"
    monkeypatch.setenv("HARNESS_GYM_LLM_API_KEY", "sk-harness")
    assert OpenAIChatClient().api_key == "sk-harness"
    server.script.append(Scripted(body=ok_body("env")))
    assert client.chat(MESSAGES).text == "env"
    assert server.requests[0]["model"] == "env-model"


def test_retries_429_then_500_then_success(server: ScriptedServer) -> None:
    server.script.extend(
        [
            Scripted(status=429, body=b'{"error": "rate limited"}'),
            Scripted(status=500, body=b'{"error": "boom"}'),
            Scripted(body=ok_body("finally", {"prompt_tokens": 3, "completion_tokens": 4})),
        ]
    )
    client, sleep = make_client(server, max_retries=5, backoff_s=0.5, max_backoff_s=0.75)
    result = client.chat(MESSAGES)
    assert result.text == "finally"
    assert (result.prompt_tokens, result.completion_tokens) == (3, 4)
    assert len(server.requests) == 3
    assert len(sleep.calls) == 2
    # full jitter: uniform(0, min(cap, backoff * 2**k))
    assert 0.0 <= sleep.calls[0] <= 0.5
    assert 0.0 <= sleep.calls[1] <= 0.75


def test_retry_after_is_honoured_as_sent_within_the_deadline(server: ScriptedServer) -> None:
    """A server's ``Retry-After`` is waited out as sent, beyond ``max_backoff_s`` (45 s: a rate limit's
    usual window), as long as it ends within the call's deadline; one past it gives up at once."""
    clock = FakeClock()
    server.script.extend(
        [
            Scripted(status=429, headers={"Retry-After": "0.3"}),
            Scripted(status=503, headers={"Retry-After": "45"}),
            Scripted(body=ok_body()),
        ]
    )
    client, _ = make_client(server, max_backoff_s=1.0, sleep=clock.sleep, clock=clock)
    assert client.chat(MESSAGES).text == "hello"
    assert clock.slept == [pytest.approx(0.3), 45.0]
    server.script.append(Scripted(status=429, headers={"Retry-After": "45"}))
    client, _ = make_client(server, deadline_s=30.0, sleep=clock.sleep, clock=clock)
    with pytest.raises(LLMError, match=r"retry after 45s, past the call's deadline of 30s"):
        client.chat(MESSAGES)


class FakeClock:
    """A monotonic clock that only the client's sleeps advance: deadlines without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_deadline_is_used_to_its_end_on_a_refused_connection() -> None:
    """``--deadline 30`` against a port nobody listens on retries for the whole 30 s (the last attempt
    just before the deadline), not until the first backoff that would cross it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections are refused
    clock = FakeClock()
    client = OpenAIChatClient(
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        deadline_s=30.0,
        backoff_s=1.0,
        max_backoff_s=30.0,
        rng=random.Random(3),
        sleep=clock.sleep,
        clock=clock,
    )
    start = clock.now
    with pytest.raises(LLMError, match=r"deadline of 30s passed.*connection error"):
        client.chat(MESSAGES)
    assert clock.now - start >= 29.0
    assert clock.now - start <= 30.0


def test_retry_after_as_an_http_date_and_unusable_values(server: ScriptedServer) -> None:
    """An HTTP-date ``Retry-After`` waits until that time (a past one: not at all); a value that is
    neither seconds nor a date is ignored, and the jittered backoff applies."""
    in_100_s = email.utils.formatdate(time.time() + 100, usegmt=True)
    an_hour_ago = email.utils.formatdate(time.time() - 3600, usegmt=True)
    server.script.extend(
        [
            Scripted(status=503, headers={"Retry-After": in_100_s}),
            Scripted(status=503, headers={"Retry-After": an_hour_ago}),
            Scripted(status=503, headers={"Retry-After": "soon"}),
            Scripted(status=429, headers={"Retry-After": "nan"}),
            Scripted(),
        ]
    )
    client, sleep = make_client(server, max_retries=4, max_backoff_s=1000.0)
    assert client.chat(MESSAGES).text == "hello"
    jitter = random.Random(0)  # make_client's generator: drawn only for the last two retries (k = 2, 3)
    expected = [jitter.uniform(0.0, 0.5 * 2**2), jitter.uniform(0.0, 0.5 * 2**3)]
    assert 90.0 <= sleep.calls[0] <= 100.0 and sleep.calls[1] == 0.0
    assert sleep.calls[2:] == expected


def test_a_reply_broken_off_mid_body_is_retried(server: ScriptedServer) -> None:
    cut = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"choi'
    server.script.extend([Scripted(raw=cut), Scripted(raw=b"not http at all\r\n\r\n"), Scripted()])
    client, sleep = make_client(server)
    assert client.chat(MESSAGES).text == "hello"
    assert len(server.requests) == 3 and len(sleep.calls) == 2
    server.default = Scripted(raw=cut)
    client, _ = make_client(server, max_retries=1)
    with pytest.raises(LLMError, match=r"after 2 attempt\(s\): protocol error \(IncompleteRead"):
        client.chat(MESSAGES)


def test_a_malformed_base_url_fails_at_once_naming_it() -> None:
    for base_url in ("127.0.0.1:8000/v1", "ftp://127.0.0.1/v1"):  # never retried until the deadline
        with pytest.raises(LLMError, match="must start with http:// or https://") as info:
            OpenAIChatClient(base_url=base_url, model="m")
        assert repr(base_url) in str(info.value)
    sleep = RecordingSleep()
    client = OpenAIChatClient(base_url="http://127.0.0.1:port/v1", model="m", sleep=sleep)
    with pytest.raises(LLMError, match=r"bad LLM endpoint URL .*nonnumeric port") as info:
        client.chat(MESSAGES)
    assert info.value.url == client.url and sleep.calls == []


def test_retryable_status_exhausted(server: ScriptedServer) -> None:
    server.default = Scripted(status=502, body=b"bad gateway")
    client, sleep = make_client(server, max_retries=2)
    with pytest.raises(LLMError, match="502") as info:
        client.chat(MESSAGES)
    assert info.value.status == 502
    assert server.base_url in str(info.value)
    assert len(server.requests) == 3
    assert len(sleep.calls) == 2


def test_timeout_is_retried_then_fails(server: ScriptedServer) -> None:
    server.default = Scripted(delay_s=2.0)
    client, sleep = make_client(server, timeout_s=0.1, max_retries=1)
    with pytest.raises(LLMError, match=r"timed out|timeout") as info:
        client.chat(MESSAGES)
    assert server.base_url in str(info.value)
    assert len(server.requests) == 2
    assert len(sleep.calls) == 1


def test_timeout_then_success(server: ScriptedServer) -> None:
    server.script.extend([Scripted(delay_s=2.0), Scripted(body=ok_body("recovered"))])
    client, sleep = make_client(server, timeout_s=0.2, max_retries=2)
    assert client.chat(MESSAGES).text == "recovered"
    assert len(sleep.calls) == 1


def test_malformed_json_is_retried_then_named(server: ScriptedServer) -> None:
    server.script.append(Scripted(body=b"<html>not json</html>"))
    server.script.append(Scripted(body=ok_body("after a bad body")))
    client, sleep = make_client(server)
    assert client.chat(MESSAGES).text == "after a bad body"  # one malformed body never stops a run
    assert len(server.requests) == 2 and len(sleep.calls) == 1
    server.default = Scripted(body=b"<html>not json</html>")
    client, sleep = make_client(server, max_retries=2)
    with pytest.raises(LLMError, match="malformed"):
        client.chat(MESSAGES)
    assert len(server.requests) == 2 + 3
    assert len(sleep.calls) == 2


def test_json_not_an_object(server: ScriptedServer) -> None:
    server.default = Scripted(body=b"[1, 2]")
    client, _ = make_client(server, max_retries=1)
    with pytest.raises(LLMError, match="malformed"):
        client.chat(MESSAGES)


@pytest.mark.parametrize(
    "body",
    [b'{"choices": []}', b'{"usage": {"prompt_tokens": 1}}', b'{"choices": null}', b'{"choices": ["s"]}'],
)
def test_missing_or_empty_choices_are_a_reply_without_a_choice(server: ScriptedServer, body: bytes) -> None:
    server.script.append(Scripted(body=body))
    client, _ = make_client(server)
    result = client.chat(MESSAGES)  # a reply of its own kind (the executor counts it), not an error
    assert result.no_choice and result.text == ""
    assert len(server.requests) == 1


@pytest.mark.parametrize("choice", [{"message": {"role": "assistant"}}, {"message": {"content": None}}])
def test_missing_message_content_is_an_empty_reply(server: ScriptedServer, choice: object) -> None:
    server.script.append(Scripted(body=json.dumps({"choices": [choice]}).encode()))
    client, _ = make_client(server)
    result = client.chat(MESSAGES)
    assert result.text == "" and not result.no_choice and result.reasoning is None


def test_reasoning_tool_calls_and_refusals_are_passed_through(server: ScriptedServer) -> None:
    thinking = {"content": None, "reasoning_content": "Let me think step by step about"}
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    bodies = [
        {"choices": [{"message": thinking, "finish_reason": "length"}]},
        {
            "choices": [
                {"message": {"content": "", "reasoning": "vLLM's newer name"}, "finish_reason": "stop"}
            ]
        },
        {"choices": [{"message": {"content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"}]},
        {"choices": [{"message": {"content": None, "refusal": "I can't help with that."}}]},
        {"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]},
    ]
    server.script.extend(Scripted(body=json.dumps(b).encode()) for b in bodies)
    client, _ = make_client(server)
    cut, empty, called, refused, filtered = (client.chat(MESSAGES) for _ in bodies)
    assert cut.truncated and cut.text == "" and cut.reasoning == thinking["reasoning_content"]
    assert empty.reasoning == "vLLM's newer name" and not empty.truncated
    assert called.tool_calls == (call,) and called.finish_reason == "tool_calls"
    assert refused.refusal == "I can't help with that."
    assert filtered.finish_reason == "content_filter"
    assert len(server.requests) == len(bodies)  # none of them is retried


def test_extra_request_fields_reach_the_server(server: ScriptedServer) -> None:
    server.script.append(Scripted())
    client, _ = make_client(server)
    extra = {"top_p": 0.9, "stop": ["END"], "temperature": 0.3, "model": "ignored", "reasoning_effort": "low"}
    client.chat(MESSAGES, seed=5, extra=extra)
    [payload] = server.requests
    assert payload["model"] == "test-model" and payload["messages"] == MESSAGES  # never overridden
    assert (payload["top_p"], payload["stop"], payload["temperature"]) == (0.9, ["END"], 0.3)
    assert payload["seed"] == 5 and payload["reasoning_effort"] == "low"


def test_400_is_not_retried(server: ScriptedServer) -> None:
    server.script.append(Scripted(status=400, body=b'{"error": {"message": "unknown model test-model"}}'))
    server.default = Scripted(body=ok_body("should not be reached"))
    client, sleep = make_client(server)
    with pytest.raises(LLMError, match="HTTP 400") as info:
        client.chat(MESSAGES)
    assert "unknown model" in str(info.value)
    assert info.value.status == 400
    assert len(server.requests) == 1
    assert sleep.calls == []


def test_unreachable_endpoint_names_url(server: ScriptedServer) -> None:
    server.close()  # port now closed: connections are refused
    client, sleep = make_client(server, max_retries=2)
    with pytest.raises(LLMError, match="after 3 attempt") as info:
        client.chat(MESSAGES)
    assert f"http://127.0.0.1:{server.port}/v1/chat/completions" in str(info.value)
    assert info.value.url == client.url
    assert len(sleep.calls) == 2
    assert all(0.0 <= s <= 1.0 for s in sleep.calls)


def test_unreachable_unused_port() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # socket closed without listen: nothing accepts on this port
    client = OpenAIChatClient(
        base_url=f"http://127.0.0.1:{port}", model="m", max_retries=1, timeout_s=1.0, sleep=RecordingSleep()
    )
    with pytest.raises(LLMError, match=f"127.0.0.1:{port}/chat/completions"):
        client.chat(MESSAGES)


def test_concurrency_is_bounded_but_parallel(server: ScriptedServer) -> None:
    server.default = Scripted(body=ok_body("par"), delay_s=0.05)
    server.gate_at = 2  # each request waits (up to 3 s) until two are in flight, proving parallelism
    client, _ = make_client(server, max_concurrency=2, timeout_s=5.0)
    results: list[ChatResult] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(client.chat(MESSAGES))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not errors
    assert len(results) == 8
    assert len(server.requests) == 8
    assert server.max_in_flight == 2


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        OpenAIChatClient(base_url="http://127.0.0.1:1", model="m", max_concurrency=0)
    with pytest.raises(ValueError):
        OpenAIChatClient(base_url="http://127.0.0.1:1", model="m", max_retries=-1)


# -- truncation, retry logging, the call's deadline ---------------------------------------------------


def test_finish_reason_length_is_reported_as_truncated(server: ScriptedServer) -> None:
    body = json.dumps(
        {"choices": [{"message": {"content": "def f(x):\n    return"}, "finish_reason": "length"}]}
    ).encode()
    server.script.append(Scripted(body=body))
    server.script.append(Scripted())  # ok_body: no finish_reason at all
    client, _ = make_client(server)
    cut = client.chat(MESSAGES)
    assert cut.finish_reason == "length" and cut.truncated
    whole = client.chat(MESSAGES)
    assert whole.finish_reason is None and not whole.truncated


def test_retries_are_logged_aggregated(server: ScriptedServer, caplog: pytest.LogCaptureFixture) -> None:
    """The first retry is logged at once; the others of every request are counted into one line per
    interval, by kind, never one line each."""
    clock = FakeClock()
    client, _ = make_client(server, sleep=clock.sleep, clock=clock, max_retries=None, backoff_s=0.1)
    with caplog.at_level("WARNING", logger="harness_gym.executors.openai_client"):
        for _ in range(20):
            server.script.extend([Scripted(status=503, body=b"busy"), Scripted(status=429), Scripted()])
            assert client.chat(MESSAGES).text == "hello"
        clock.now += 11.0  # past the interval: the next retry brings the count
        server.script.extend([Scripted(status=503, body=b"busy"), Scripted()])
        assert client.chat(MESSAGES).text == "hello"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "1 retry (HTTP 503 x1)" in lines[0]
    assert "40 retries in the last" in lines[1] and "HTTP 429 x20" in lines[1] and "HTTP 503 x20" in lines[1]


def test_a_hung_endpoint_is_bounded_by_the_call_deadline(server: ScriptedServer) -> None:
    server.default = Scripted(delay_s=5.0)
    client, _ = make_client(server, timeout_s=0.3, deadline_s=0.5, max_retries=10, backoff_s=0.01)
    with pytest.raises(LLMError, match=r"deadline|timed out"):
        client.chat(MESSAGES)
    # far fewer than the 11 attempts max_retries allows: the deadline stopped the retries
    assert len(server.requests) <= 3


def test_deadline_must_be_positive(server: ScriptedServer) -> None:
    with pytest.raises(ValueError, match="deadline_s"):
        make_client(server, deadline_s=0)


def test_a_timed_out_request_is_closed_before_its_slot_is_reused() -> None:
    """A server that notices closed connections (as vLLM and SGLang abort them) never holds more of
    this client's requests than ``max_concurrency``, however many time out and are retried."""
    import select

    live: set[socket.socket] = set()
    lock = threading.Lock()
    seen = {"max_live": 0, "requests": 0, "closed": 0}
    stop = threading.Event()

    def closed(sock: socket.socket) -> bool:
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            sock = self.connection
            with lock:
                for other in [s for s in live if closed(s)]:  # the client's FIN is in before its next SYN
                    live.discard(other)
                    seen["closed"] += 1
                live.add(sock)
                seen["requests"] += 1
                seen["max_live"] = max(seen["max_live"], len(live))
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline and not stop.is_set():  # "generating" until the client leaves
                if select.select([sock], [], [], 0.01)[0] and closed(sock):
                    break
            with lock:
                live.discard(sock)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    client = OpenAIChatClient(
        base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
        model="m",
        max_concurrency=2,
        timeout_s=0.2,
        max_retries=2,
        backoff_s=0.01,
        deadline_s=10,
    )
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.chat(MESSAGES)
        except LLMError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()
    assert len(errors) == 6 and all("timed out" in str(e) for e in errors)
    assert seen["requests"] == 6 * 3  # every attempt reached the server
    assert seen["max_live"] <= 2  # never more than the client's limit, though 18 requests timed out


# -- context overflow, pre-flight, environment ------------------------------------------------------
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
    "llama.cpp": {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
        }
    },
}
"""HTTP 400 bodies of servers refusing a prompt longer than the model's context, in each one's wording."""


@pytest.mark.parametrize("vendor", sorted(CONTEXT_400))
def test_a_context_overflow_is_named_in_every_vendors_wording(server: ScriptedServer, vendor: str) -> None:
    server.script.append(Scripted(status=400, body=json.dumps(CONTEXT_400[vendor]).encode()))
    client, sleep = make_client(server)
    with pytest.raises(ContextOverflowError, match="does not fit the model's context window") as caught:
        client.chat(MESSAGES)
    assert caught.value.detail and "{" not in caught.value.detail  # the server's message, not its JSON
    assert len(server.requests) == 1 and sleep.calls == []  # never retried


def test_another_400_is_no_context_overflow(server: ScriptedServer) -> None:
    body = json.dumps({"error": {"message": "temperature must be >= 0", "code": "invalid_value"}}).encode()
    server.script.append(Scripted(status=400, body=body))
    client, _ = make_client(server)
    with pytest.raises(LLMError) as caught:
        client.chat(MESSAGES)
    assert not isinstance(caught.value, ContextOverflowError)


def test_preflight_names_an_unknown_model_and_an_unreachable_url(server: ScriptedServer) -> None:
    server.models = ["qwen3-8b", "llama3:latest"]
    preflight(server.base_url, "qwen3-8b")
    preflight(server.base_url, "llama3")  # Ollama's implicit tag
    with pytest.raises(LLMError, match=r"model 'qwen3-8B' is not served at .*; it serves: qwen3-8b, llama3"):
        preflight(server.base_url, "qwen3-8B")
    server.models = None  # a server without the route is taken on trust
    preflight(server.base_url, "anything")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LLMError, match=r"cannot reach the LLM endpoint .*ConnectionRefusedError"):
        preflight(f"http://127.0.0.1:{port}/v1", "m")
    assert server.requests == []  # no completion was asked for


def test_the_openai_sdks_environment_is_a_fallback(server: ScriptedServer, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sdk")
    server.script.append(Scripted())
    client = OpenAIChatClient(model="m", max_retries=0)
    assert client.chat(MESSAGES).text == "hello"
    assert server.headers_seen[0]["Authorization"] == "Bearer sk-sdk"
    monkeypatch.setenv("HARNESS_GYM_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    assert OpenAIChatClient(model="m").base_url == "http://127.0.0.1:1/v1"  # ours first
