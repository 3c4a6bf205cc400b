"""A small, dependency-free client for OpenAI-compatible chat-completions endpoints.

Works with OpenAI, vLLM, Ollama, llama.cpp server and anything else that serves
``POST {base_url}/chat/completions``. Only the standard library is used (``urllib.request``).

Configuration falls back to environment variables: ``HARNESS_GYM_LLM_BASE_URL``,
``HARNESS_GYM_LLM_MODEL`` and ``HARNESS_GYM_LLM_API_KEY`` (then ``OPENAI_API_KEY``). The key is optional,
since local servers usually need none.

Transient failures (HTTP 408/429/5xx, a malformed response body, timeouts, connection errors) are
retried with exponential backoff and full jitter until the call's deadline (``deadline_s``, 10 minutes by
default: long enough for a server that restarts and reloads its weights); a ``Retry-After`` header is
honoured, capped at ``max_backoff_s``. Each retry is logged (one ``WARNING`` line on the
``harness_gym.executors.openai_client`` logger) as it happens. Everything else (HTTP 400, 401, 404, a bad
URL) fails fast with an :class:`LLMError`. Concurrent calls from many threads are bounded by a semaphore;
a timed-out request's connection is closed before its slot is freed, so a server that aborts work on a
closed connection (vLLM, SGLang) never holds more requests of this client than ``max_concurrency``.

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

RETRYABLE_STATUS = frozenset({408, 429})
"""HTTP statuses retried besides every 5xx."""

_BODY_EXCERPT_CHARS = 300
DEFAULT_MAX_TOKENS = 1024
"""Completion budget per call; ``OpenAIConfig.max_tokens`` uses the same default."""

log = logging.getLogger(__name__)
_CONTEXT_HINT = re.compile(r"context|n_ctx|maximum.{0,20}tokens|too long", re.IGNORECASE)


class LLMError(RuntimeError):
    """The endpoint could not produce a usable completion."""

    def __init__(self, message: str, *, status: int | None = None, url: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.url = url


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

    def __init__(self, reason: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status


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
    ) -> None:
        base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        model = model or os.environ.get(ENV_MODEL) or None
        missing = []
        if not base_url:
            missing.append(f"base URL (pass base_url= or set {ENV_BASE_URL}, e.g. http://127.0.0.1:8000/v1)")
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
        self._semaphore = threading.BoundedSemaphore(max_concurrency)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable for worker processes: locks are recreated, each process gets its own bound."""
        state = self.__dict__.copy()
        del state["_rng_lock"], state["_semaphore"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rng_lock = threading.Lock()
        self._semaphore = threading.BoundedSemaphore(self.max_concurrency)

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

    def _backoff(self, retry_index: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        ceiling = min(self.max_backoff_s, self.backoff_s * (2.0**retry_index))
        with self._rng_lock:
            return self._rng.uniform(0.0, ceiling)

    def _post_with_retries(self, body: bytes) -> ChatResult:
        start = time.monotonic()
        last: _Retryable | None = None
        attempts = 0
        attempt = -1
        while self.max_retries is None or attempt < self.max_retries:
            attempt += 1
            if attempt:
                assert last is not None
                wait = self._backoff(attempt - 1, last.retry_after)
                if time.monotonic() - start + wait >= self.deadline_s:
                    raise LLMError(
                        f"LLM endpoint {self.url} gave up after {attempts} attempt(s): the call's deadline "
                        f"of {self.deadline_s:g}s would pass before the next retry; "
                        f"last error: {last.reason}",
                        status=last.status,
                        url=self.url,
                    )
                log.warning(
                    "LLM endpoint %s: retry %d/%s in %.2fs after %s",
                    self.url,
                    attempt,
                    "-" if self.max_retries is None else self.max_retries,
                    wait,
                    last.reason,
                )
                self._sleep(wait)
            remaining = self.deadline_s - (time.monotonic() - start)
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
                    timeout = min(self.timeout_s, max(0.001, self.deadline_s - (time.monotonic() - start)))
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
            hint = ""
            if status == 400 and _CONTEXT_HINT.search(err_body.decode("utf-8", errors="replace")):
                hint = (
                    " (the prompt plus max_tokens does not fit the model's context window: give the server "
                    "a larger context, e.g. llama.cpp's --n_ctx, or lower max_tokens)"
                )
            raise LLMError(
                f"LLM endpoint {self.url} returned HTTP {status}{hint}: {_excerpt(err_body)}",
                status=status,
                url=self.url,
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            # HTTPError is a URLError subclass and handled above; this is transport trouble.
            if _is_timeout(exc):
                raise _Retryable(f"request timed out after {timeout or self.timeout_s:g}s (timeout)") from exc
            reason = getattr(exc, "reason", exc)
            raise _Retryable(f"connection error ({type(reason).__name__}: {reason}); unreachable?") from exc
        except (ValueError, http.client.InvalidURL) as exc:  # e.g. unknown url type
            raise LLMError(f"bad LLM endpoint URL {self.url!r}: {exc}", url=self.url) from exc
        except http.client.HTTPException as exc:  # IncompleteRead, BadStatusLine, ...
            raise _Retryable(f"protocol error ({type(exc).__name__}: {exc})") from exc

    def _parse(self, raw: bytes) -> ChatResult:
        """The reply's first choice; a body that is not a JSON object is retried (``_Retryable``)."""
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _Retryable(f"malformed JSON response: {_excerpt(raw)}") from None
        if not isinstance(data, dict):
            raise _Retryable(f"malformed JSON response: expected an object, got {type(data).__name__}")
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
