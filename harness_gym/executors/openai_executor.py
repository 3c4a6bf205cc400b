"""A real chat LLM as the executor: any OpenAI-compatible endpoint, behind the record/replay cache.

The domain's :class:`~harness_gym.executors.prompts.Prompts` turns each request into chat messages and
each reply into an artifact; this module only moves them between the environment, the response cache and
the endpoint. What it guarantees:

- a reply without an artifact of the required form, or one cut at ``max_tokens``
  (``finish_reason == "length"``: "truncated reply"), is an executor error the harness sees (a failure
  signal in the episode), never an exception and never an artifact;
- a prompt too long for the model's context is never answered silently: a server that refuses it
  (HTTP 400: llama.cpp, vLLM, OpenAI) stops the run with an error saying so; with
  ``context_tokens`` set, every call must also leave ``max_tokens`` of room in that context by the
  usage the endpoint reports (``prompt_tokens + max_tokens <= context_tokens``), else its reply is a
  "truncated reply" executor error: that catches servers that cut an over-long prompt silently (Ollama
  keeps only its ``num_ctx`` tokens) or shorten the reply's budget to what is left (llama.cpp);
- an endpoint that stays down after the client's retries, or a miss while replaying a cache, *is* an
  exception (:class:`~harness_gym.executors.openai_client.LLMError`,
  :class:`~harness_gym.executors.cache.CacheMissError`): a silently failed call would corrupt a dataset;
- replaying a recorded cache (``cache_mode="read_only"``) reproduces the recorded episodes exactly, with
  no network: cache keys depend only on the model, base URL, messages and sampling parameters. At
  temperature 0 (greedy) that is all, so equal prompts share one entry; above 0 the call's index in its
  episode and a per-call seed drawn from the environment's generator join the key, so episodes sample
  independently and still replay identically;
- every call leaves an audit record (``ExecutorResponse.io``, the step record's ``executor_io``): the
  messages sent, the raw reply, its ``finish_reason``, the cache key and the error if any.
"""

from __future__ import annotations

import copy
import os
import threading
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from harness_gym.executors.base import TRUNCATED_REPLY, DomainView, ExecutorRequest, ExecutorResponse, Usage
from harness_gym.executors.cache import MODES, CachedResponse, ResponseCache
from harness_gym.executors.openai_client import (
    DEFAULT_MAX_TOKENS,
    ENV_BASE_URL,
    ENV_MODEL,
    OpenAIChatClient,
)
from harness_gym.executors.prompts import ParseError, Prompts

CACHE_MODE_ALIASES = {"record": "read_write", "replay": "read_only"}
"""Command-line friendly names of the response-cache modes."""


@dataclass(frozen=True)
class OpenAIConfig:
    """Settings of an :class:`OpenAIExecutor`: plain values, so they pickle into worker processes and
    go into dataset metadata. The API key is never part of it (argument or environment only)."""

    model: str | None = None
    """Model name as the endpoint knows it; default ``$HARNESS_GYM_LLM_MODEL``."""
    base_url: str | None = None
    """Endpoint root, e.g. ``http://127.0.0.1:8000/v1``; default ``$HARNESS_GYM_LLM_BASE_URL``."""
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    """Completion budget per call; a reply that reaches it is a "truncated reply" executor error."""
    context_tokens: int | None = None
    """The model's context window as the server runs it (e.g. llama.cpp's ``--n_ctx``, Ollama's
    ``num_ctx``), if known: a call whose reported ``prompt_tokens`` plus ``max_tokens`` exceeds it is a
    "truncated reply" executor error (the server may have cut the prompt or the reply). Needs an endpoint
    that reports usage; ``None`` checks nothing beyond the server's own refusal."""
    timeout_s: float = 60.0
    """Per request; a timed-out request is retried."""
    deadline_s: float = 600.0
    """Bound on one call's total time over all its retries (a hung endpoint ends the run)."""
    fold_system: bool = False
    """Send the system prompt as the head of the first user message instead of a ``system`` message,
    for chat templates that drop or reject the system role."""
    max_retries: int = 5
    """Retries after the first attempt on 408/429/5xx, timeouts and connection errors."""
    backoff_s: float = 0.5
    """Base of the exponential backoff (full jitter)."""
    max_concurrency: int = 4
    """Requests in flight at once per process (shared by every env of the process)."""
    price_per_1k_prompt: float = 0.0
    """USD per 1,000 prompt tokens, for the cost accounting."""
    price_per_1k_completion: float = 0.0
    cache: str | None = None
    """Response-cache SQLite file; ``None`` calls the endpoint every time."""
    cache_mode: str = "read_write"
    """``read_write`` (record), ``read_only`` (replay: a miss is an error) or ``off``."""

    def __post_init__(self) -> None:
        mode = CACHE_MODE_ALIASES.get(self.cache_mode, self.cache_mode)
        if mode not in MODES:
            raise ValueError(
                f"unknown cache mode {self.cache_mode!r}; expected one of "
                f"{', '.join((*MODES, *CACHE_MODE_ALIASES))}"
            )
        object.__setattr__(self, "cache_mode", mode)
        if self.context_tokens is not None and self.context_tokens <= self.max_tokens:
            raise ValueError(
                f"context_tokens ({self.context_tokens}) must exceed max_tokens ({self.max_tokens}): the "
                "prompt needs room in the context too"
            )
        if mode == "read_only" and self.cache is None:
            raise ValueError("cache mode 'read_only' (replay) needs a cache file")

    def resolved(self) -> OpenAIConfig:
        """This config with the model and base URL filled in from the environment where unset."""
        return replace(
            self,
            model=self.model or os.environ.get(ENV_MODEL) or None,
            base_url=(self.base_url or os.environ.get(ENV_BASE_URL) or "").rstrip("/") or None,
        )

    def content_key(self) -> dict[str, Any]:
        """The settings that change what the executor replies (dataset resume checks compare them)."""
        resolved = self.resolved()
        return {
            "executor": "openai",
            "model": resolved.model,
            "base_url": resolved.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "fold_system": self.fold_system,
            # only when set, so keys written before the option existed still match
            **({"context_tokens": self.context_tokens} if self.context_tokens is not None else {}),
        }


class OpenAIExecutor:
    """The frozen LLM behind DRAFT, REVISE, judge-type CHECK and executor-chosen tool calls.

    Pass it (or an :class:`OpenAIConfig`, or ``"openai"`` to read everything from the environment) as
    ``gym.make(env_id, executor=...)``; the environment binds it to its domain's prompts. Copies bound to
    different environments of one process share the HTTP client (and so its concurrency bound), the
    cache and the counters.
    """

    name = "openai"

    def __init__(
        self,
        config: OpenAIConfig | None = None,
        *,
        api_key: str | None = None,
        client: OpenAIChatClient | None = None,
        **settings: Any,
    ) -> None:
        self.config = replace(config or OpenAIConfig(), **settings).resolved()
        c = self.config
        self.client = client or OpenAIChatClient(
            base_url=c.base_url,
            model=c.model,
            api_key=api_key,
            temperature=c.temperature,
            max_tokens=c.max_tokens,
            timeout_s=c.timeout_s,
            deadline_s=c.deadline_s,
            max_retries=c.max_retries,
            backoff_s=c.backoff_s,
            max_concurrency=c.max_concurrency,
            price_per_1k_prompt=c.price_per_1k_prompt,
            price_per_1k_completion=c.price_per_1k_completion,
        )
        self.cache = ResponseCache(c.cache, c.cache_mode if c.cache is not None else "off")
        self.prompts: Prompts | None = None
        self._counts = {"requests": 0, "api_calls": 0, "parse_failures": 0, "truncations": 0}
        self._lock = threading.Lock()

    def for_domain(self, domain: DomainView) -> OpenAIExecutor:
        """A copy that speaks ``domain``'s prompts (the environment calls this)."""
        if domain.prompts_cls is None:
            raise ValueError(f"{domain.env_id} defines no prompts for a chat LLM executor")
        bound = copy.copy(self)
        bound.prompts = domain.prompts_cls(domain)
        return bound

    def describe(self) -> dict[str, Any]:
        """What dataset metadata records: the settings (no key) and the cache's content hash."""
        return {
            "name": self.name,
            **{k: v for k, v in asdict(self.config).items() if k != "cache"},
            "cache_path": self.config.cache,
            "cache_hash": self.cache.content_hash() if self.config.cache is not None else None,
        }

    def stats(self) -> dict[str, int]:
        """Counters of this process: requests, endpoint calls, parse failures, truncated replies, cache
        hits/misses."""
        with self._lock:
            counts = dict(self._counts)
        cache = self.cache.stats()
        return {**counts, "cache_hits": cache["hits"], "cache_misses": cache["misses"]}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- the executor protocol -----------------------------------------------------------------------
    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        if self.prompts is None:
            raise RuntimeError("OpenAIExecutor is not bound to a domain: pass it to gym.make(..., executor=)")
        messages = self.prompts.messages(request)
        if self.config.fold_system:
            messages = fold_system(messages)
        seed = int(rng.integers(2**31 - 1))  # drawn every call so the env's random stream never depends on it
        params: dict[str, Any] = {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        sample_index: int | None = None  # greedy: equal prompts, equal replies, one cache entry
        if self.config.temperature > 0:
            params["seed"] = seed
            sample_index = request.sample_index
        model, base_url = self.client.model, self.client.base_url
        key = ResponseCache.key(model, base_url, messages, params, sample_index)
        stored_request = {
            "model": model,
            "base_url": base_url,
            "messages": messages,
            "params": params,
            "sample_index": sample_index,
        }
        reply = self.cache.fetch(
            key, lambda: self._call(messages, params.get("seed")), model, request=stored_request
        )
        cached = reply.hit if self.cache.mode != "off" else None
        usage = Usage(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd)
        io: dict[str, Any] = {
            "messages": messages,
            "reply": reply.text,
            "finish_reason": reply.finish_reason,
            "cache_key": key if self.cache.mode != "off" else None,
            "error": None,
        }
        with self._lock:
            self._counts["requests"] += 1
        error: str | None = None
        artifact = reply.text
        overflow = self._context_overflow(reply)
        if overflow is not None:
            error = f"{TRUNCATED_REPLY}: {overflow}"
            with self._lock:
                self._counts["truncations"] += 1
        elif reply.finish_reason == "length":
            error = f"{TRUNCATED_REPLY}: cut off at max_tokens={self.config.max_tokens}"
            with self._lock:
                self._counts["truncations"] += 1
        else:
            try:
                artifact = self.prompts.parse(request, reply.text)
            except ParseError as exc:
                error = f"parse failure: {exc}"
                with self._lock:
                    self._counts["parse_failures"] += 1
        io["error"] = error
        if error is not None:
            return ExecutorResponse(text=reply.text, usage=usage, error=error, cached=cached, io=io)
        return ExecutorResponse(text=artifact, usage=usage, cached=cached, io=io)

    def _context_overflow(self, reply: CachedResponse) -> str | None:
        """Why the call broke the ``context_tokens`` rule, or None."""
        limit = self.config.context_tokens
        if limit is None or reply.prompt_tokens + self.config.max_tokens <= limit:
            return None
        return (
            f"the prompt ({reply.prompt_tokens} tokens) leaves less than max_tokens={self.config.max_tokens} "
            f"of the model's {limit}-token context (context_tokens); the server may have cut the prompt "
            "or the reply: gather less, lower max_tokens or give the server a larger context"
        )

    def _call(self, messages: list[dict[str, str]], seed: int | None) -> CachedResponse:
        result = self.client.chat(messages, seed=seed)  # LLMError once retries are spent
        with self._lock:
            self._counts["api_calls"] += 1
        return CachedResponse(
            result.text,
            result.prompt_tokens,
            result.completion_tokens,
            result.cost_usd,
            finish_reason=result.finish_reason,
        )


def fold_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages without a ``system`` role: system text goes at the head of the first user message."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if not system:
        return rest
    for message in rest:
        if message["role"] == "user":
            message["content"] = f"{system}\n\n{message['content']}"
            return rest
    return [{"role": "user", "content": system}, *rest]
