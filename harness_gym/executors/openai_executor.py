"""A real chat LLM as the executor: any OpenAI-compatible endpoint, behind the record/replay cache.

The domain's :class:`~harness_gym.executors.prompts.Prompts` turns each request into chat messages and
each reply into an artifact; this module only moves them between the environment, the response cache and
the endpoint. What it guarantees:

- every well-formed reply is an outcome of one step, never a stopped run: an artifact, or an executor
  error of one counted kind (``harness_gym.executors.base.REPLY_KINDS``): a reply without an artifact in
  the required form (``parse failure``); one cut at ``max_tokens`` (``finish_reason == "length"``, a
  reasoning model that ran out mid-thought with empty content included: ``truncated reply``); an empty
  reply or one with no choice (``no content``); ``tool_calls`` where text was asked for (``tool call``);
  a refusal or content filter (``refused``);
- a prompt too long for the model's context is never answered silently: a server that refuses it
  (HTTP 400 in vLLM's, SGLang's, OpenAI's, Ollama's or llama.cpp's wording) gives the step an executor
  error of kind ``context overflow``, counted with the truncated replies, and the episode goes on as
  the harness would after any executor error (the refusal is recorded, so a resume or a replay repeats
  it); with ``context_tokens`` set, every call must also leave ``max_tokens`` of room in that context by the
  usage the endpoint reports (``prompt_tokens + max_tokens <= context_tokens``), else its reply is a
  "truncated reply" executor error: that catches servers that cut an over-long prompt silently (Ollama
  keeps only its ``num_ctx`` tokens) or shorten the reply's budget to what is left (llama.cpp);
- an endpoint that stays down past the call's deadline (retries with backoff, 10 minutes by default),
  or a miss while replaying a cache, *is* an exception
  (:class:`~harness_gym.executors.openai_client.LLMError`,
  :class:`~harness_gym.executors.cache.CacheMissError`): a silently failed call would corrupt a dataset;
- replaying a recorded cache (``cache_mode="read_only"``) reproduces the recorded episodes exactly, with
  no network: cache keys depend only on the model, the messages and the request's parameters (never the
  endpoint's URL). At temperature 0 (greedy) that is all, so equal prompts share one entry; above 0 the
  call's index in its episode and a per-call seed drawn from the environment's generator join the key,
  so episodes sample independently and still replay identically;
- every call leaves an audit record (``ExecutorResponse.io``, the step record's ``executor_io``): the
  messages sent, the raw reply and its reasoning, ``finish_reason``, the model, the cache key and whether
  it was a hit, the latency, the tokens and cost, and the error if any;
- money and seconds are what was sent: a reply replayed from the cache costs nothing and takes no time
  (its tokens still count, as cached, in the episode's ``usage``);
- single-flight: identical greedy requests in flight at once (same cache key) share one call; the
  others wait for it and are marked ``shared`` in their audit record (not sent: no cost, no time), so
  ``--concurrency`` never multiplies the calls of a protocol's repeated episodes;
- guards (per process): ``max_spend`` dollars, ``max_tokens_total`` sent tokens and ``max_calls`` sent
  calls stop the run with a :class:`BudgetReached` before the call that would pass them (a collection
  or evaluation then resumes where it stopped); and when nearly all of the first
  ``EARLY_CHECK_REPLIES`` replies fail in one way (``fail_on_error_rate``, on by default), the run stops
  with an :class:`EarlyStop` naming the failure and the setting that fixes it, instead of spending
  every call on it.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import tomllib
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.executors.base import (
    CONTEXT_OVERFLOW,
    REPLY_KINDS,
    TRUNCATED_REPLY,
    DomainView,
    ExecutorRequest,
    ExecutorResponse,
    Usage,
    error_kind,
)
from harness_gym.executors.cache import MODES, CachedResponse, ResponseCache
from harness_gym.executors.openai_client import (
    DEFAULT_MAX_TOKENS,
    ENV_BASE_URL,
    ENV_MODEL,
    ENV_OPENAI_BASE_URL,
    ContextOverflowError,
    LLMError,
    OpenAIChatClient,
)
from harness_gym.executors.prompts import STRUCTURED_MODES, ParseError, Prompts

CACHE_MODE_ALIASES = {"record": "read_write", "replay": "read_only", "reask": "reask_errors"}
"""Command-line friendly names of the response-cache modes."""

_SCHEDULING = (
    "max_concurrency",
    "cache",
    "cache_mode",
    "max_spend",
    "max_tokens_total",
    "max_calls",
    "fail_on_error_rate",
    "preflight",
)
"""Settings that never change a reply (left out of what a cache records of a run)."""

EARLY_CHECK_REPLIES = 20
"""The early check looks at this many first replies of a process."""
EARLY_CHECK_SHARE = 0.9
"""... and stops the run when at least this share of them failed in one way."""

FIXES: dict[str, str] = {
    "parse_failures": "the replies are not in the required form: try --structured json-schema or "
    "--structured tools, or a stronger model",
    "truncations": "raise --max-tokens (a reasoning model: --reasoning-effort low, or switch thinking off "
    "with --extra-body), or give the server a larger context",
    "context_overflows": "give the server a larger context (vLLM --max-model-len, llama.cpp --ctx-size, "
    "Ollama num_ctx) or lower --max-tokens",
    "no_content": "the model answers nothing: check its chat template and reasoning settings "
    "(--extra-body, --fold-system) or raise --max-tokens",
    "tool_calls": "the model calls tools instead of answering: --structured tools, or a server without "
    "tool parsing",
    "refusals": "the model refuses: another model, or check the server's content filter",
}
"""What fixes a run whose replies nearly all fail one way (the early check names it)."""


class BudgetReached(LLMError):
    """A spend guard (``max_spend``, ``max_tokens_total``, ``max_calls``) stopped the run."""


class EarlyStop(LLMError):
    """Nearly all of the first replies failed one way: the run stops before spending the rest."""


@dataclass(frozen=True)
class OpenAIConfig:
    """Settings of an :class:`OpenAIExecutor`: plain values, so they pickle into worker processes and
    go into dataset metadata. The API key is never part of it (argument or environment only).

    Every field can come from a TOML file (:meth:`from_toml`, ``--config run.toml``), top level or
    under ``[executor]``, with the field names below."""

    model: str | None = None
    """Model name as the endpoint knows it; default ``$HARNESS_GYM_LLM_MODEL``."""
    base_url: str | None = None
    """Endpoint root, e.g. ``http://127.0.0.1:8000/v1``; default ``$HARNESS_GYM_LLM_BASE_URL``. Not part
    of a cache key: the same model behind another URL replays the same recording."""
    temperature: float = 0.0
    top_p: float | None = None
    """Nucleus sampling; ``None`` sends none (the server's default)."""
    seed: int | None = None
    """Sent with every request: at temperature 0 as it is (servers whose greedy decoding still varies,
    e.g. with batching, then vary less), above 0 added to the per-call seed drawn from the environment's
    generator. ``None``: no seed at temperature 0, the per-call seed above it."""
    stop: tuple[str, ...] = ()
    """Stop sequences (a string is one)."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    """Completion budget per call; a reply that reaches it is a "truncated reply" executor error."""
    context_tokens: int | None = None
    """The model's context window as the server runs it (e.g. llama.cpp's ``--n_ctx``, Ollama's
    ``num_ctx``), if known: a call whose reported ``prompt_tokens`` plus ``max_tokens`` exceeds it is a
    "truncated reply" executor error (the server may have cut the prompt or the reply). Needs an endpoint
    that reports usage; ``None`` checks nothing beyond the server's own refusal."""
    reasoning_effort: str | None = None
    """A reasoning model's thinking budget (``low`` / ``medium`` / ``high``, as OpenAI's and vLLM's
    ``reasoning_effort`` take it); servers with another knob take it through ``extra_body``."""
    extra_body: str | None = None
    """A JSON object merged into every request, for what a server takes beyond the standard fields
    (e.g. ``{"chat_template_kwargs": {"enable_thinking": false}}`` for Qwen3 on vLLM or SGLang,
    ``{"top_k": 20}``); a mapping is stored as its canonical JSON."""
    structured: str = "off"
    """``off`` (free text, parsed), ``json-schema`` (the reply's JSON schema as ``response_format``) or
    ``tools`` (the reply as the arguments of a function call); ``harness_gym.executors.prompts``."""
    timeout_s: float = 300.0
    """Per request; a timed-out request is closed (the server may abort it) and retried."""
    deadline_s: float = 600.0
    """Bound on one call's total time over all its retries: a server that restarts and reloads its
    weights within it is waited for; one down for longer ends the run."""
    fold_system: bool = False
    """Send the system prompt as the head of the first user message instead of a ``system`` message,
    for chat templates that drop or reject the system role."""
    max_retries: int | None = None
    """Retries after the first attempt on 408/429/5xx, malformed bodies, timeouts and connection errors;
    ``None``: until ``deadline_s``."""
    backoff_s: float = 1.0
    """Base of the exponential backoff (full jitter): retry k waits up to ``backoff_s * 2**k``."""
    max_backoff_s: float = 30.0
    """Cap on one backoff between retries (a server's ``Retry-After`` is waited out as sent, within
    ``deadline_s``)."""
    max_concurrency: int = 4
    """Requests in flight at once per process (shared by every env of the process)."""
    price_in: float = 0.0
    """USD per million prompt tokens sent (cache hits cost nothing)."""
    price_out: float = 0.0
    """USD per million completion tokens sent."""
    cache: str | None = None
    """Response-cache SQLite file; ``None`` calls the endpoint every time."""
    cache_mode: str = "read_write"
    """``read_write`` (record), ``read_only`` (replay: a miss is an error), ``reask_errors`` (record,
    asking recorded error replies again) or ``off``."""
    max_spend: float | None = None
    """Stop the run (resumably) before a call once this many USD were sent (by ``price_in`` /
    ``price_out``), per process."""
    max_tokens_total: int | None = None
    """Stop the run before a call once this many tokens (prompt + completion) were sent, per process."""
    max_calls: int | None = None
    """Stop the run before a call once this many calls were sent to the endpoint, per process."""
    fail_on_error_rate: bool = True
    """Stop the run when at least ``EARLY_CHECK_SHARE`` of the first ``EARLY_CHECK_REPLIES`` replies
    failed in one way (all cut at ``max_tokens``, all refusals, ...), naming the setting that fixes it."""
    preflight: bool = True
    """Commands ask ``GET /models`` once before the run: an unreachable URL or an unknown model is one
    line within seconds (replays never ask)."""

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
        if self.structured not in STRUCTURED_MODES:
            raise ValueError(
                f"unknown structured mode {self.structured!r}; expected one of {', '.join(STRUCTURED_MODES)}"
            )
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        for name in ("max_spend", "max_tokens_total", "max_calls"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("price_in", "price_out"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
        object.__setattr__(self, "stop", stop)
        if self.extra_body is not None:
            body = self.extra_body
            if isinstance(body, str):
                try:
                    body = json.loads(body)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"extra_body is not JSON: {exc}") from None
            if not isinstance(body, Mapping):
                raise ValueError(f"extra_body must be a JSON object, got {type(body).__name__}")
            object.__setattr__(self, "extra_body", json.dumps(dict(body), sort_keys=True))

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], **overrides: Any) -> OpenAIConfig:
        """The settings in a TOML file (top level, or its ``[executor]`` table), ``overrides`` on top; a
        key that is no field is a ``ValueError`` naming it."""
        return cls(**{**cls.toml_settings(path), **overrides})

    @classmethod
    def toml_settings(cls, path: str | os.PathLike[str]) -> dict[str, Any]:
        """The settings a TOML file gives (only those it names), checked as :meth:`from_toml` does; a
        relative ``cache`` path is taken from the file's directory, not the working directory."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"cannot read executor settings {os.fspath(path)!r}: {exc}") from None
        data = data.get("executor", data)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"{os.fspath(path)}: unknown executor setting(s) {', '.join(unknown)}; known: "
                + ", ".join(sorted(known))
            )
        if isinstance(data.get("extra_body"), Mapping):
            data["extra_body"] = json.dumps(data["extra_body"], sort_keys=True)
        if isinstance(data.get("cache"), str):  # a relative path means: beside the settings file
            data["cache"] = os.fspath(Path(path).parent / Path(data["cache"]).expanduser())
        if isinstance(data.get("stop"), list):
            data["stop"] = tuple(data["stop"])
        cls(**data)  # a bad value is named now
        return dict(data)

    def resolved(self) -> OpenAIConfig:
        """This config with the model and base URL filled in from the environment where unset."""
        return replace(
            self,
            model=self.model or os.environ.get(ENV_MODEL) or None,
            base_url=(
                self.base_url or os.environ.get(ENV_BASE_URL) or os.environ.get(ENV_OPENAI_BASE_URL) or ""
            ).rstrip("/")
            or None,
        )

    def content_key(self) -> dict[str, Any]:
        """The settings that change what the executor replies (dataset resume checks compare them)."""
        resolved = self.resolved()
        optional = {
            "context_tokens": self.context_tokens,
            "top_p": self.top_p,
            "seed": self.seed,
            "stop": list(self.stop) or None,
            "reasoning_effort": self.reasoning_effort,
            "extra_body": self.extra_body,
            "structured": None if self.structured == "off" else self.structured,
        }
        return {
            "executor": "openai",
            "model": resolved.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "fold_system": self.fold_system,
            # only when set, so keys written before an option existed still match
            **{name: value for name, value in optional.items() if value is not None},
        }

    def recorded(self) -> dict[str, Any]:
        """What a response cache keeps of this configuration (``ResponseCache.settings``): every setting
        but the cache itself and the scheduling, so a replay can take them all from the file."""
        data = asdict(self.resolved())
        for name in _SCHEDULING:
            del data[name]
        data["stop"] = list(self.stop)
        return data

    def request_params(self) -> dict[str, Any]:
        """The request fields every call sends beside the model and messages (the seed and the structured
        output's schema are added per call)."""
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.stop:
            params["stop"] = list(self.stop)
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
        if self.extra_body is not None:
            params.update(json.loads(self.extra_body))
        return params


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
            max_backoff_s=c.max_backoff_s,
            max_concurrency=c.max_concurrency,
        )
        self.cache = ResponseCache(c.cache, c.cache_mode if c.cache is not None else "off")
        self.cache.record_settings(c.recorded())
        self.prompts: Prompts | None = None
        self._counts = {
            "requests": 0,
            "api_calls": 0,
            "shared": 0,
            "sent_tokens": 0,
            **dict.fromkeys(REPLY_KINDS.values(), 0),
            "context_overflows": 0,
        }
        self._spent = [0.0]  # USD sent, in a list so the copies bound to every env share it
        self._early: list[str | None] = []  # the first replies' failure kinds (None: an artifact)
        self._stop: list[LLMError] = []  # why a guard stopped this process's run, once one has
        self._inflight: dict[str, Future] = {}
        self._lock = threading.Lock()

    def for_domain(self, domain: DomainView) -> OpenAIExecutor:
        """A copy that speaks ``domain``'s prompts (the environment calls this)."""
        if domain.prompts_cls is None:
            raise ValueError(f"{domain.env_id} defines no prompts for a chat LLM executor")
        bound = copy.copy(self)  # through __getstate__: share what it leaves out again
        bound._lock, bound._inflight = self._lock, self._inflight
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

    def stats(self) -> dict[str, Any]:
        """Counters of this process: requests, endpoint calls, calls shared with an identical one in
        flight, sent tokens and ``cost_usd``, executor errors by kind (parse failures, truncated replies
        with the context overflows among them also apart, no content, tool calls, refusals), cache
        hits/misses."""
        with self._lock:
            counts: dict[str, Any] = dict(self._counts)
            counts["cost_usd"] = self._spent[0]
        cache = self.cache.stats()
        return {**counts, "cache_hits": cache["hits"], "cache_misses": cache["misses"]}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"], state["_inflight"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._inflight = {}

    # -- the executor protocol -----------------------------------------------------------------------
    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        if self.prompts is None:
            raise RuntimeError("OpenAIExecutor is not bound to a domain: pass it to gym.make(..., executor=)")
        if self._stop:  # a guard stopped the run: every episode in flight stops too
            raise type(self._stop[0])(str(self._stop[0]))
        config = self.config
        messages = self.prompts.messages(request)
        if config.structured != "off":
            note = self.prompts.structured_note(request, config.structured)
            messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n{note}"}
        if config.fold_system:
            messages = fold_system(messages)
        seed = int(rng.integers(2**31 - 1))  # drawn every call so the env's random stream never depends on it
        params = config.request_params()
        sample_index: int | None = None  # greedy: equal prompts, equal replies, one cache entry
        if config.temperature > 0:
            params["seed"] = (seed + (config.seed or 0)) % (2**31 - 1)
            sample_index = request.sample_index
        elif config.seed is not None:
            params["seed"] = config.seed
        if config.structured != "off":
            name, schema = self.prompts.reply_schema(request)
            if config.structured == "json-schema":
                params["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema},
                }
            else:
                function = {"name": name, "description": "Submit your reply.", "parameters": schema}
                params["tools"] = [{"type": "function", "function": function}]
                params["tool_choice"] = {"type": "function", "function": {"name": name}}
        model = self.client.model
        key = ResponseCache.key(model, messages, params, sample_index)
        stored_request = {
            "model": model,
            "base_url": self.client.base_url,
            "messages": messages,
            "params": params,
            "sample_index": sample_index,
        }
        reply, shared = self._fetch(key, sample_index is None, messages, params, stored_request, request)
        cached = True if shared else reply.hit if self.cache.mode != "off" else None
        sent = not cached
        cost = (reply.prompt_tokens * config.price_in + reply.completion_tokens * config.price_out) / 1e6
        usage = Usage(
            reply.prompt_tokens,
            reply.completion_tokens,
            cost if sent else 0.0,
            reply.latency_s if sent else 0.0,
        )
        artifact, error = self._read(request, reply)
        with self._lock:
            self._counts["requests"] += 1
            self._counts["shared"] += shared
            if error is not None:
                self._counts[error_kind(error)] += 1
                self._counts["context_overflows"] += error.startswith(CONTEXT_OVERFLOW)
        self._early_check(error)
        io: dict[str, Any] = {
            "messages": messages,
            "reply": reply.text,
            "reasoning_content": reply.reasoning,
            "finish_reason": reply.finish_reason,
            "model": model,
            "cache_key": key,
            "cached": cached,
            "latency_s": usage.latency_s,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "cost_usd": usage.cost_usd,
            "error": error,
        }
        if shared:
            io["shared"] = True  # answered by an identical call in flight: not sent again
        if reply.hit and reply.is_error:
            io["recorded_error"] = True  # replayed from the cache as the error it was, never an answer
        if reply.tool_calls:
            io["tool_calls"] = list(reply.tool_calls)
        if error is not None:
            return ExecutorResponse(text=reply.text, usage=usage, error=error, cached=cached, io=io)
        return ExecutorResponse(text=artifact, usage=usage, cached=cached, io=io)

    def _read(self, request: ExecutorRequest, reply: CachedResponse) -> tuple[str, str | None]:
        """``(artifact, None)``, or ``(reply text, executor error)`` whose prefix is its kind."""
        assert self.prompts is not None
        structured = self.config.structured
        if reply.error is not None:
            return reply.text, reply.error
        if reply.no_choice:
            return reply.text, "no content: the reply held no choice"
        if reply.refusal is not None or reply.finish_reason == "content_filter":
            why = reply.refusal or "the server's content filter stopped the reply"
            return reply.text, f"refused: {' '.join(why.split())[:200]}"
        overflow = self._context_overflow(reply)
        if overflow is not None:
            return reply.text, f"{TRUNCATED_REPLY}: {overflow}"
        if reply.finish_reason == "length":
            mid_thought = reply.reasoning and not reply.text.strip()
            thinking = " while still reasoning (no answer yet)" if mid_thought else ""
            return reply.text, f"{TRUNCATED_REPLY}: cut off at max_tokens={self.config.max_tokens}{thinking}"
        text = reply.text
        if reply.tool_calls:
            if structured != "tools":
                names = ", ".join(str((c.get("function") or {}).get("name", "?")) for c in reply.tool_calls)
                return reply.text, f"tool call: the reply called {names} instead of answering in text"
            arguments = (reply.tool_calls[0].get("function") or {}).get("arguments")
            try:
                obj = json.loads(arguments) if isinstance(arguments, str) else arguments
                text = self.prompts.structured_text(request, obj)
            except (json.JSONDecodeError, ParseError) as exc:
                return reply.text, f"parse failure: the function call's arguments do not fit ({exc})"
        elif not text.strip():
            thought = f" (its reasoning holds {len(reply.reasoning)} characters)" if reply.reasoning else ""
            return reply.text, f"no content: the reply is empty{thought}"
        elif structured == "json-schema":
            try:
                text = self.prompts.structured_text(request, json.loads(text))
            except json.JSONDecodeError:
                pass  # a server that ignored response_format: read the text as free text
            except ParseError as exc:
                return reply.text, f"parse failure: {exc}"
        try:
            return self.prompts.parse(request, text), None
        except ParseError as exc:
            return reply.text, f"parse failure: {exc}"

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

    def _fetch(
        self,
        key: str,
        greedy: bool,
        messages: list[dict[str, str]],
        params: dict[str, Any],
        stored: dict[str, Any],
        request: ExecutorRequest,
    ) -> tuple[CachedResponse, bool]:
        """The reply for ``key`` and whether it was shared: a greedy request identical to one in flight
        waits for that one's reply instead of being sent (single-flight)."""

        def fetch() -> CachedResponse:
            return self.cache.fetch(
                key,
                lambda: self._call(messages, params),
                self.client.model,
                request=stored,
                episode=request.episode,
                step=request.step,
            )

        if not greedy:
            return fetch(), False
        with self._lock:
            flight = self._inflight.get(key)
            owner = flight is None
            if owner:
                flight = self._inflight[key] = Future()
        assert flight is not None
        if not owner:
            reply = flight.result()  # the owner's exception, if it failed, is this call's too
            if request.episode is not None and request.step is not None:
                self.cache.note_call(request.episode, request.step, key)
            return replace(reply, hit=False), True
        try:
            reply = fetch()
        except BaseException as exc:
            flight.set_exception(exc)
            raise
        else:
            flight.set_result(reply)
        finally:
            with self._lock:
                del self._inflight[key]
        return reply, False

    def _guard(self) -> None:
        """Stop before a call that the spend guards forbid (or once any guard has stopped the run)."""
        c = self.config
        with self._lock:
            sent, tokens, spent = self._counts["api_calls"], self._counts["sent_tokens"], self._spent[0]
            why = None
            if c.max_calls is not None and sent >= c.max_calls:
                why = f"{sent} calls sent, the --max-calls limit of {c.max_calls}"
            elif c.max_tokens_total is not None and tokens >= c.max_tokens_total:
                why = f"{tokens} tokens sent, the --max-tokens-total limit of {c.max_tokens_total}"
            elif c.max_spend is not None and spent >= c.max_spend:
                why = f"${spent:.4f} spent, the --max-spend limit of ${c.max_spend:g}"
            if why is not None:
                self._stop.append(
                    BudgetReached(
                        f"spend guard reached: {why} (this process); rerun with a higher limit to resume"
                    )
                )
                raise self._stop[0]

    def _early_check(self, error: str | None) -> None:
        """After the first ``EARLY_CHECK_REPLIES`` replies: stop when nearly all failed one way."""
        if not self.config.fail_on_error_rate or self.cache.mode == "read_only":
            return  # a replay repeats what was recorded
        with self._lock:
            if len(self._early) >= EARLY_CHECK_REPLIES:
                return
            kind = None
            if error is not None:
                kind = "context_overflows" if error.startswith(CONTEXT_OVERFLOW) else error_kind(error)
            self._early.append(kind)
            if len(self._early) < EARLY_CHECK_REPLIES:
                return
            counts = {k: self._early.count(k) for k in set(self._early) if k is not None}
            worst = max(counts, key=counts.__getitem__, default=None)
            if worst is None or counts[worst] < EARLY_CHECK_SHARE * EARLY_CHECK_REPLIES:
                return
            example = error if error is not None and (kind == worst) else worst
            self._stop.append(
                EarlyStop(
                    f"{counts[worst]} of the first {EARLY_CHECK_REPLIES} replies were "
                    f"{worst.replace('_', ' ')} (e.g. {' '.join(str(example).split())[:160]}): "
                    f"{FIXES[worst]}; --no-fail-on-error-rate goes on regardless"
                )
            )
            raise self._stop[0]

    def _call(self, messages: list[dict[str, str]], params: dict[str, Any]) -> CachedResponse:
        self._guard()
        try:
            result = self.client.chat(messages, extra=params)  # LLMError once the deadline has passed
        except ContextOverflowError as exc:  # the server refused the prompt: this step's outcome
            with self._lock:
                self._counts["api_calls"] += 1
            return CachedResponse("", error=f"{CONTEXT_OVERFLOW}: {exc.detail}")
        cost = (
            result.prompt_tokens * self.config.price_in + result.completion_tokens * self.config.price_out
        ) / 1e6
        with self._lock:
            self._counts["api_calls"] += 1
            self._counts["sent_tokens"] += result.prompt_tokens + result.completion_tokens
            self._spent[0] += cost
        return CachedResponse(
            result.text,
            result.prompt_tokens,
            result.completion_tokens,
            result.cost_usd,
            finish_reason=result.finish_reason,
            reasoning=result.reasoning,
            tool_calls=result.tool_calls,
            refusal=result.refusal,
            no_choice=result.no_choice,
            latency_s=result.latency_s,
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
