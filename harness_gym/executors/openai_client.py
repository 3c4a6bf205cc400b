"""A small, dependency-free client for OpenAI-compatible chat-completions endpoints.

Works with OpenAI, vLLM, Ollama, llama.cpp server and anything else that serves
``POST {base_url}/chat/completions``. Only the standard library is used (``urllib.request``).

Configuration falls back to environment variables: ``HARNESS_GYM_LLM_BASE_URL`` (then the OpenAI SDK's
``OPENAI_BASE_URL``), ``HARNESS_GYM_LLM_MODEL`` and ``HARNESS_GYM_LLM_API_KEY`` (then ``OPENAI_API_KEY``).
The key is optional, since local servers usually need none.

Transient failures (HTTP 408/429/5xx, a malformed response body, timeouts, connection errors) are
retried with exponential backoff and full jitter until the call's deadline (``deadline_s``, 10 minutes by
default: long enough for a server that restarts and reloads its weights): the last attempt starts just
before the deadline, never a whole backoff early. A ``Retry-After`` header is honoured as sent, however
long, as long as it ends within the deadline (one that would not gives up at once). Retries are logged
on the ``harness_gym.executors.openai_client`` logger, aggregated: the first at once, the rest as one
``WARNING`` line per ``RETRY_LOG_INTERVAL_S`` with their count by reason, however many requests retry.
A prompt too long for the model's context (HTTP 400 in vLLM's, SGLang's, OpenAI's, Ollama's or
llama.cpp's wording, :data:`CONTEXT_OVERFLOW`) is a :class:`ContextOverflowError`, which the executor
turns into a step error. Everything else (HTTP 400, 401, 404, a bad URL) fails fast with an
:class:`LLMError`. :func:`preflight` asks ``GET /models`` once before a run, so a typo'd URL or model
name is one line within seconds rather than retries until the deadline. Concurrent calls from many
threads are bounded by a semaphore; a timed-out request's connection is closed before its slot is
freed, so a server that aborts work on a closed connection (vLLM, SGLang) never holds more requests of
this client than ``max_concurrency``.

A well-formed reply is returned as it came, whatever its shape (:class:`ChatResult`): text, or empty
content with the reasoning a reasoning model wrote (``reasoning_content``), or ``tool_calls``, or a
refusal, or no choice at all. What each shape means for an episode is the executor's business
(``openai_executor.reply_kind``): none of them stops a run.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import os
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

ENV_BASE_URL = "HARNESS_GYM_LLM_BASE_URL"
ENV_MODEL = "HARNESS_GYM_LLM_MODEL"
ENV_API_KEY = "HARNESS_GYM_LLM_API_KEY"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"
ENV_OPENAI_BASE_URL = "OPENAI_BASE_URL"
RETRY_LOG_INTERVAL_S = 10.0
"""Retries after the first are logged as one line per this many seconds (per client)."""
_LAST_ATTEMPT_S = 0.5
"""The last retry starts this long before the call's deadline, at the latest."""

RETRYABLE_STATUS = frozenset({408, 429})
"""HTTP statuses retried besides every 5xx."""

_BODY_EXCERPT_CHARS = 300
DEFAULT_MAX_TOKENS = 1024
"""Completion budget per call; ``OpenAIConfig.max_tokens`` uses the same default."""

log = logging.getLogger(__name__)
CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|context length|context size"
    r"|context window|n_ctx",
    re.IGNORECASE,
)
"""An HTTP 400 body that says the prompt does not fit the context. Wordings: vLLM "This model's maximum
context length is N tokens. However, you requested M tokens ..."; SGLang "The input (N tokens) is longer
than the model's context length (M tokens)." and "Requested token count exceeds the model's maximum
context length of N tokens"; OpenAI code ``context_length_exceeded``; Ollama "the input length exceeds
the context length"; llama.cpp type ``exceed_context_size_error``, "the request exceeds the available
context size"."""


class LLMError(RuntimeError):
    """The endpoint could not produce a usable completion."""

    def __init__(self, message: str, *, status: int | None = None, url: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.url = url


class ContextOverflowError(LLMError):
    """The server refused the prompt as too long for the model's context (HTTP 400): one step's
    outcome, not a failed endpoint. ``detail`` is the server's message."""

    def __init__(self, message: str, detail: str, *, status: int | None = None, url: str | None = None):
        super().__init__(message, status=status, url=url)
        self.detail = detail


@dataclass(frozen=True)
class ChatResult:
    """The first choice of a reply, as the endpoint sent it."""

    text: str
    """``choices[0].message.content``; empty when the reply has none (see the other fields)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    finish_reason: str | None = None
    """As the endpoint reported it: ``stop``, ``length`` (cut at ``max_tokens``), ``content_filter``,
    ``tool_calls``, ... or None."""
    reasoning: str | None = None
    """What a reasoning model thought before answering (vLLM / SGLang ``reasoning_content``, or
    ``reasoning``), if the server returns it separately."""
    tool_calls: tuple[dict[str, Any], ...] = ()
    """``choices[0].message.tool_calls`` as sent (function name and JSON-encoded arguments)."""
    refusal: str | None = None
    """``choices[0].message.refusal``, if the model refused."""
    no_choice: bool = False
    """The reply held no choice at all (an empty or missing ``choices`` list)."""
    latency_s: float = field(default=0.0, compare=False)
    """Seconds from sending the successful attempt to reading its reply."""

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class _Retryable(Exception):
    """Internal: one attempt failed in a way worth retrying."""

    def __init__(
        self, reason: str, retry_after: float | None = None, status: int | None = None, kind: str = ""
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status
        self.kind = kind or (f"HTTP {status}" if status is not None else reason.split(" (")[0])


class _RetryLog:
    """Retries of many requests as few lines: the first at once, then one per ``interval_s`` with the
    count by kind (HTTP status, timeout, connection error, ...) and the latest reason."""

    def __init__(self, url: str, interval_s: float, clock: Callable[[], float]) -> None:
        self.url = url
        self.interval_s = interval_s
        self.clock = clock
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.since: float | None = None
        self.last: float | None = None

    def note(self, kind: str, reason: str, wait: float) -> None:
        with self.lock:
            now = self.clock()
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if self.since is None:
                self.since = now
            if self.last is not None and now - self.last < self.interval_s:
                return
            total = sum(self.counts.values())
            counts = ", ".join(f"{k} x{n}" for k, n in sorted(self.counts.items()))
            span = f" in the last {now - self.since:.0f}s" if self.last is not None else ""
            self.counts, self.since, self.last = {}, None, now
        log.warning(
            "LLM endpoint %s: %d retr%s%s (%s); latest: %s, next in %.2fs",
            self.url,
            total,
            "y" if total == 1 else "ies",
            span,
            counts,
            reason,
            wait,
        )


def _excerpt(body: bytes | str) -> str:
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= _BODY_EXCERPT_CHARS else text[:_BODY_EXCERPT_CHARS] + "..."


def _parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date); None if unusable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def _error_message(text: str) -> str:
    """The message of an error body (``{"error": {"message": ...}}``, ``{"message": ...}`` or
    ``{"error": "..."}``), else the body's excerpt."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return _excerpt(text)
    if isinstance(data, dict):
        error = data.get("error", data)
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message:
            return _excerpt(message)
    return _excerpt(text)


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | socket.timeout):
        return True
    reason = getattr(exc, "reason", None)
    return isinstance(reason, TimeoutError | socket.timeout)


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


class OpenAIChatClient:
    """Client for an OpenAI-compatible ``/chat/completions`` endpoint.

    ``max_retries`` counts retries after the first attempt (so at most ``max_retries + 1`` requests);
    None (the default) retries until the deadline. The backoff before retry ``k`` (0-based) is
    ``uniform(0, min(max_backoff_s, backoff_s * 2**k))`` drawn from ``rng``; a server's ``Retry-After``
    replaces it, capped at ``max_backoff_s``. ``deadline_s`` caps one :meth:`chat` call's total time
    (attempts, backoff and waiting for a slot included): no retry starts past it and each attempt's
    timeout is cut to what is left.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float = 300.0,
        max_retries: int | None = None,
        backoff_s: float = 1.0,
        max_concurrency: int = 4,
        price_per_1k_prompt: float = 0.0,
        price_per_1k_completion: float = 0.0,
        *,
        max_backoff_s: float = 30.0,
        deadline_s: float = 600.0,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        base_url = base_url or os.environ.get(ENV_BASE_URL) or os.environ.get(ENV_OPENAI_BASE_URL) or None
        model = model or os.environ.get(ENV_MODEL) or None
        missing = []
        if not base_url:
            missing.append(
                f"base URL (pass base_url= or set {ENV_BASE_URL} or {ENV_OPENAI_BASE_URL}, e.g. "
                "http://127.0.0.1:8000/v1)"
            )
        if not model:
            missing.append(f"model (pass model= or set {ENV_MODEL})")
        if missing:
            raise LLMError("OpenAIChatClient is missing " + " and ".join(missing))
        if not base_url.lower().startswith(("http://", "https://")):  # else retried until the deadline
            raise LLMError(f"bad LLM endpoint URL {base_url!r}: it must start with http:// or https://")
        if max_retries is not None and max_retries < 0:
            raise ValueError("max_retries must be >= 0 (or None: until the deadline)")
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        if deadline_s <= 0:
            raise ValueError("deadline_s must be > 0")
        assert base_url is not None and model is not None
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.api_key = api_key or os.environ.get(ENV_API_KEY) or os.environ.get(ENV_OPENAI_API_KEY) or None
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.deadline_s = deadline_s
        self.max_concurrency = max_concurrency
        self.price_per_1k_prompt = price_per_1k_prompt
        self.price_per_1k_completion = price_per_1k_completion
        self._rng = rng if rng is not None else random.Random()
        self._rng_lock = threading.Lock()
        self._sleep = sleep
        self._clock = clock
        self._semaphore = threading.BoundedSemaphore(max_concurrency)
        self._retry_log = _RetryLog(self.url, RETRY_LOG_INTERVAL_S, clock)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable for worker processes: locks are recreated, each process gets its own bound."""
        state = self.__dict__.copy()
        del state["_rng_lock"], state["_semaphore"], state["_retry_log"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rng_lock = threading.Lock()
        self._semaphore = threading.BoundedSemaphore(self.max_concurrency)
        self._retry_log = _RetryLog(self.url, RETRY_LOG_INTERVAL_S, self._clock)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChatClient(url={self.url!r}, model={self.model!r})"

    # -- public -----------------------------------------------------------------------------------------

    def chat(
        self, messages: list[dict], seed: int | None = None, extra: dict[str, Any] | None = None
    ) -> ChatResult:
        """Send ``messages`` and return the first choice with usage, cost and latency.

        ``extra`` adds request fields (``top_p``, ``stop``, ``response_format``, ``tools``,
        ``reasoning_effort``, a server's own fields, ...); it may override ``temperature`` and
        ``max_tokens`` but never ``model`` or ``messages``."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if seed is not None:
            payload["seed"] = int(seed)
        payload.update({k: v for k, v in (extra or {}).items() if k not in ("model", "messages")})
        body = json.dumps(payload).encode("utf-8")
        return self._post_with_retries(body)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.price_per_1k_prompt + completion_tokens * self.price_per_1k_completion
        ) / 1000.0

    # -- internals --------------------------------------------------------------------------------------

    def _backoff(self, retry_index: int) -> float:
        ceiling = min(self.max_backoff_s, self.backoff_s * (2.0**retry_index))
        with self._rng_lock:
            return self._rng.uniform(0.0, ceiling)

    def _post_with_retries(self, body: bytes) -> ChatResult:
        clock = self._clock
        start = clock()
        last: _Retryable | None = None
        attempts = 0
        attempt = -1
        while self.max_retries is None or attempt < self.max_retries:
            attempt += 1
            if attempt:
                assert last is not None
                left = self.deadline_s - (clock() - start)
                if last.retry_after is not None and last.retry_after >= left:
                    raise LLMError(
                        f"LLM endpoint {self.url} gave up after {attempts} attempt(s): the server asked to "
                        f"retry after {last.retry_after:g}s, past the call's deadline of "
                        f"{self.deadline_s:g}s (--deadline); last error: {last.reason}",
                        status=last.status,
                        url=self.url,
                    )
                if left <= _LAST_ATTEMPT_S:
                    raise LLMError(
                        f"LLM endpoint {self.url} gave up after {attempts} attempt(s): the call's deadline "
                        f"of {self.deadline_s:g}s passed (--deadline); last error: {last.reason}",
                        status=last.status,
                        url=self.url,
                    )
                wait = last.retry_after if last.retry_after is not None else self._backoff(attempt - 1)
                wait = min(wait, left - _LAST_ATTEMPT_S)  # the last attempt still starts in time
                self._retry_log.note(last.kind, last.reason, wait)
                self._sleep(wait)
            remaining = self.deadline_s - (clock() - start)
            if remaining <= 0:
                break
            attempts += 1
            try:
                if not self._semaphore.acquire(timeout=remaining):
                    raise LLMError(
                        f"LLM endpoint {self.url}: no request slot free within the call's deadline of "
                        f"{self.deadline_s:g}s (max_concurrency={self.max_concurrency})",
                        url=self.url,
                    )
                try:
                    timeout = min(self.timeout_s, max(0.001, self.deadline_s - (clock() - start)))
                    sent = time.monotonic()
                    result = self._parse(self._post_once(body, timeout))
                    return replace(result, latency_s=time.monotonic() - sent)
                finally:
                    self._semaphore.release()
            except _Retryable as exc:
                last = exc
        reason = last.reason if last is not None else "no attempt could start"
        raise LLMError(
            f"LLM endpoint {self.url} failed after {attempts} attempt(s): {reason}",
            status=last.status if last is not None else None,
            url=self.url,
        )

    def _post_once(self, body: bytes, timeout: float | None = None) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout_s) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            try:
                err_body = exc.read()
            except Exception:
                err_body = b""
            finally:
                exc.close()
            status = exc.code
            if status in RETRYABLE_STATUS or 500 <= status < 600:
                raise _Retryable(
                    f"HTTP {status}: {_excerpt(err_body)}",
                    retry_after=_parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None),
                    status=status,
                ) from exc
            text = err_body.decode("utf-8", errors="replace")
            if status in (400, 413) and CONTEXT_OVERFLOW.search(text):
                detail = _error_message(text)
                raise ContextOverflowError(
                    f"LLM endpoint {self.url} returned HTTP {status}: the prompt plus max_tokens does not "
                    f"fit the model's context window ({detail})",
                    detail,
                    status=status,
                    url=self.url,
                ) from exc
            raise LLMError(
                f"LLM endpoint {self.url} returned HTTP {status}: {_excerpt(err_body)}",
                status=status,
                url=self.url,
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            # HTTPError is a URLError subclass and handled above; this is transport trouble.
            if _is_timeout(exc):
                raise _Retryable(
                    f"request timed out after {timeout or self.timeout_s:g}s (timeout)", kind="timeout"
                ) from exc
            reason = getattr(exc, "reason", exc)
            raise _Retryable(
                f"connection error ({type(reason).__name__}: {reason}); unreachable?", kind="connection error"
            ) from exc
        except (ValueError, http.client.InvalidURL) as exc:  # e.g. unknown url type
            raise LLMError(f"bad LLM endpoint URL {self.url!r}: {exc}", url=self.url) from exc
        except http.client.HTTPException as exc:  # IncompleteRead, BadStatusLine, ...
            raise _Retryable(f"protocol error ({type(exc).__name__}: {exc})") from exc

    def _parse(self, raw: bytes) -> ChatResult:
        """The reply's first choice; a body that is not a JSON object is retried (``_Retryable``)."""
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _Retryable(f"malformed JSON response: {_excerpt(raw)}", kind="malformed reply") from None
        if not isinstance(data, dict):
            raise _Retryable(
                f"malformed JSON response: expected an object, got {type(data).__name__}",
                kind="malformed reply",
            )
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt_tokens = _as_int(usage.get("prompt_tokens"))
        completion_tokens = _as_int(usage.get("completion_tokens"))
        cost = self.cost(prompt_tokens, completion_tokens)
        choices = data.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(first, dict):
            return ChatResult("", prompt_tokens, completion_tokens, cost, no_choice=True)
        message = first.get("message")
        message = message if isinstance(message, dict) else {}
        content = message.get("content", first.get("text"))  # ``text``: a completions-style choice
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        tool_calls = message.get("tool_calls")
        refusal = message.get("refusal")
        finish_reason = first.get("finish_reason")
        calls = tuple(c for c in tool_calls if isinstance(c, dict)) if isinstance(tool_calls, list) else ()
        return ChatResult(
            text=content if isinstance(content, str) else "",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
            tool_calls=calls,
            refusal=refusal if isinstance(refusal, str) and refusal else None,
        )


PREFLIGHT_TIMEOUT_S = 5.0


def preflight(
    base_url: str, model: str, api_key: str | None = None, timeout_s: float = PREFLIGHT_TIMEOUT_S
) -> None:
    """Ask ``GET {base_url}/models`` once: an endpoint that cannot be reached, refuses the key or does not
    serve ``model`` is an :class:`LLMError` of one line, within ``timeout_s``. A server without that
    route (any other HTTP error) or with an unreadable list is taken on trust: the run will tell.

    Ollama lists ``name:latest`` where a request may say ``name``; both are accepted."""
    url = base_url.rstrip("/") + "/models"
    api_key = api_key or os.environ.get(ENV_API_KEY) or os.environ.get(ENV_OPENAI_API_KEY) or None
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (401, 403):
            raise LLMError(
                f"LLM endpoint {base_url} refused the API key (HTTP {exc.code} on GET /models): set "
                f"{ENV_API_KEY} or {ENV_OPENAI_API_KEY}",
                status=exc.code,
                url=url,
            ) from None
        return
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        why = f"no answer within {timeout_s:g}s" if _is_timeout(exc) else f"{type(reason).__name__}: {reason}"
        raise LLMError(
            f"cannot reach the LLM endpoint {base_url} ({why}): is the server running and the URL right? "
            "(--no-preflight skips this check)",
            url=url,
        ) from None
    except ValueError as exc:
        raise LLMError(f"bad LLM endpoint URL {base_url!r}: {exc}", url=url) from None
    try:
        data = json.loads(raw.decode("utf-8"))
        served = [str(m["id"]) for m in data["data"] if isinstance(m, dict) and "id" in m]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        return
    if served and model not in served and f"{model}:latest" not in served:
        shown = ", ".join(served[:10]) + (f" and {len(served) - 10} more" if len(served) > 10 else "")
        raise LLMError(
            f"model {model!r} is not served at {base_url}; it serves: {shown} (--model; --no-preflight skips "
            "this check)",
            url=url,
        )
