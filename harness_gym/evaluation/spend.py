"""What a chat-LLM run spent and what its episodes are worth: calls sent and cached, tokens, cost,
throughput, latency percentiles, reply kinds, distinct calls and copied episodes.

Every number comes from the per-call audit records (a step record's ``executor_io``), reduced by
:func:`calls_of` to one small dict per call (no prompt, no reply: those stay joinable from the response
cache by the call's key, or by the episode id and step). A call replayed from the cache was not sent: it
costs nothing and takes no time, and its tokens are counted as cached, never as sent.

Copies: at temperature 0 the model answers a request the same way every time, so two episodes of one
task that make the same executor calls and take the same actions are one outcome counted twice (a
deterministic policy repeats itself over seeds and rollouts). :func:`episode_trace` names an episode's
outcome; :func:`distinct_episodes` counts them, and ``protocol.compare`` then resamples whole tasks for
its intervals, so copies never pass for independent draws.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from harness_gym.executors.base import CONTEXT_OVERFLOW, REPLY_KINDS, error_kind

CALL_FIELDS = (
    "key",
    "model",
    "cached",
    "shared",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)
"""What :func:`calls_of` keeps of a call's ``executor_io`` (besides its step and error kind)."""

_BULKY = ("messages", "reply", "reasoning_content", "tool_calls")
"""The parts of ``executor_io`` left out of compact step records (joinable from the cache by key)."""


def calls_of(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One compact record per executor call of an episode's step records: ``step``, ``key``, ``model``,
    ``cached``, ``shared`` (answered by an identical call in flight), ``latency_s``, ``prompt_tokens``,
    ``completion_tokens``, ``cost_usd``, ``kind`` (the error's usage counter, e.g. ``parse_failures``, or
    None) and ``overflow`` where the error is a context overflow. Steps without ``executor_io`` (a
    simulated executor's) give none."""
    out = []
    for step in steps:
        io = step.get("executor_io")
        if not io:
            continue
        record = {"step": step.get("t")}
        record.update({name: io.get("cache_key" if name == "key" else name) for name in CALL_FIELDS})
        record["kind"] = error_kind(io["error"]) if io.get("error") else None
        if (io.get("error") or "").startswith(CONTEXT_OVERFLOW):
            record["overflow"] = True
        out.append(record)
    return out


def compact_steps(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Step records without the prompts and replies (``executor_io`` keeps its key, model, cache flag,
    latency, tokens, cost and error): what evaluation outputs store per episode."""
    out = []
    for step in steps:
        io = step.get("executor_io")
        if io:
            step = {**step, "executor_io": {k: v for k, v in io.items() if k not in _BULKY}}
        out.append(dict(step))
    return out


def episode_trace(steps: Sequence[Mapping[str, Any]]) -> str | None:
    """A name for the episode's outcome: the hash of its actions and executor call keys; None when no
    step records a call key (a simulated executor draws anew every call: nothing to compare)."""
    keys = [(step.get("executor_io") or {}).get("cache_key") for step in steps]
    if not any(keys):
        return None
    text = json.dumps([[step.get("action"), key] for step, key in zip(steps, keys, strict=True)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def distinct_episodes(episodes: Iterable[tuple[str, str | None]]) -> tuple[int, int]:
    """``(distinct, total)`` over ``(task_id, trace)`` pairs; an episode without a trace is distinct."""
    seen: set[tuple[str, str]] = set()
    total = distinct = 0
    for task_id, trace in episodes:
        total += 1
        if trace is None or (task_id, trace) not in seen:
            distinct += 1
            if trace is not None:
                seen.add((task_id, trace))
    return distinct, total


def summarize_calls(calls: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Spend of a set of calls: ``calls``, ``sent`` / ``cached`` calls and their prompt and completion
    tokens, ``cost_usd`` (sent only), ``tokens_per_s`` (sent completion tokens per second of endpoint
    latency), ``latency_p50_s`` / ``latency_p95_s`` over sent calls (None without any), ``distinct``
    (distinct request keys), ``shared`` (among the cached: answered by an identical call in flight, not
    sent) and the error counts by kind (``REPLY_KINDS`` counters, ``context_overflows`` also apart)."""
    calls = list(calls)
    sent = [c for c in calls if not c.get("cached")]
    cached = [c for c in calls if c.get("cached")]
    latencies = np.asarray([float(c.get("latency_s") or 0.0) for c in sent])
    seconds = float(latencies.sum())
    out: dict[str, Any] = {
        "calls": len(calls),
        "distinct": len({c["key"] for c in calls if c.get("key")}),
        "sent": len(sent),
        "cached": len(cached),
        "sent_prompt_tokens": int(sum(c.get("prompt_tokens") or 0 for c in sent)),
        "sent_completion_tokens": int(sum(c.get("completion_tokens") or 0 for c in sent)),
        "cached_prompt_tokens": int(sum(c.get("prompt_tokens") or 0 for c in cached)),
        "cached_completion_tokens": int(sum(c.get("completion_tokens") or 0 for c in cached)),
        "cost_usd": float(sum(c.get("cost_usd") or 0.0 for c in sent)),
        "tokens_per_s": None,
        "latency_p50_s": None,
        "latency_p95_s": None,
    }
    if len(sent) and seconds > 0:
        out["tokens_per_s"] = out["sent_completion_tokens"] / seconds
        out["latency_p50_s"], out["latency_p95_s"] = (float(q) for q in np.percentile(latencies, [50, 95]))
    for counter in REPLY_KINDS.values():
        out[counter] = sum(c.get("kind") == counter for c in calls)
    out["context_overflows"] = sum(bool(c.get("overflow")) for c in calls)
    out["shared"] = sum(bool(c.get("shared")) for c in calls)
    return out


def spend_lines(
    spend: Mapping[str, Any], model: str | None, episodes: tuple[int, int] | None = None
) -> list[str]:
    """The summary lines every command prints for a chat LLM (each begins with ``executor``): calls sent
    and cached with their tokens,
    cost, throughput and latency, reply kinds, distinct calls; with ``episodes`` = (distinct, total) a
    warning when some episodes are copies."""
    lines = [
        f"executor {model}: {spend['calls']} calls ({spend['distinct']} distinct): {spend['sent']} sent "
        f"({spend['sent_prompt_tokens']} prompt + {spend['sent_completion_tokens']} completion tokens, "
        f"${spend['cost_usd']:.4f}), {spend['cached']} from the cache ({spend['cached_prompt_tokens']} + "
        f"{spend['cached_completion_tokens']} tokens, $0)"
    ]
    if spend.get("shared"):
        lines[0] += f", {spend['shared']} of them shared with an identical call in flight"
    if spend["latency_p50_s"] is not None:
        lines.append(
            f"executor speed: {spend['tokens_per_s']:.1f} completion tokens/s; latency per sent call p50 "
            f"{spend['latency_p50_s']:.2f}s, p95 {spend['latency_p95_s']:.2f}s"
        )
    kinds = ", ".join(f"{spend[c]} {c.replace('_', ' ')}" for c in REPLY_KINDS.values())
    if spend.get("context_overflows"):
        kinds = kinds.replace(
            f"{spend['truncations']} truncations",
            f"{spend['truncations']} truncations ({spend['context_overflows']} of them context overflows)",
        )
    lines.append(f"executor replies without an artifact: {kinds}")
    if episodes is not None and episodes[0] < episodes[1]:
        distinct, total = episodes
        lines.append(
            f"executor warning: only {distinct} of {total} episodes are distinct: the others repeat an "
            "episode of the same task call for call (temperature 0 with a deterministic policy repeats "
            "itself over seeds and rollouts); intervals resample whole tasks so copies never count as "
            "independent draws"
        )
    return lines
