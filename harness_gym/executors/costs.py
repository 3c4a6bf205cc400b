"""What a call would cost: prompt size from per-task cached pieces, tokens and latency (``CallCosts``).

A prompt is the domain's ``Prompts.messages`` rendering of the request: a fixed part per (task, kind,
whether the task was read), then the evidence items, the tool results, the draft and, for a REVISE, the
feedback. :class:`PromptSizer` caches each piece's length once per task (rendering a whole prompt costs
tens to hundreds of microseconds, more than a simulated step), so sizing a call is a few additions;
``tests/test_costs.py`` checks the sum against the full rendering character for character.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_gym.core.trajectory import artifact_hash
from harness_gym.executors.base import Context, DomainView, ExecutorRequest, Feedback, RequestKind
from harness_gym.executors.profiles import CallCosts
from harness_gym.executors.prompts import is_harness_error

SEPARATOR = 2
"""Characters between two parts of a prompt (``"\\n\\n"``), and between two items of one part."""
EVIDENCE_HEADING = len("## Evidence gathered\n")
TOOLS_HEADING = len("## Tool results so far\n")
CACHE_LIMIT = 200_000
"""Entries kept per cache before it is emptied (tool results are texts, so their number is open)."""
FALLBACK_ITEM_CHARS = 400
"""Characters one gathered item adds in a domain without prompts (``Domain.prompts_cls`` None)."""


class PromptSizer:
    """Characters of a request's prompt as the domain's ``Prompts`` would render it."""

    def __init__(self, domain: DomainView) -> None:
        prompts_cls = getattr(domain, "prompts_cls", None)
        self.prompts = prompts_cls(domain) if prompts_cls is not None else None
        self._fixed: dict[tuple[str, str, bool], int] = {}
        self._items: dict[tuple[str, str], int] = {}
        self._tools: dict[tuple[str, str], int] = {}

    def _cached(self, cache: dict, key: Any, compute: Callable[[], int]) -> int:
        value = cache.get(key)
        if value is None:
            if len(cache) >= CACHE_LIMIT:
                cache.clear()
            value = cache[key] = compute()
        return value

    def _fixed_part(self, request: ExecutorRequest) -> int:
        task, kind, observed = request.task, request.kind, request.context.observed
        if self.prompts is None:
            return len(task.prompt)

        key = (task.task_id, kind, observed)
        size = self._fixed.get(key)
        if size is None:  # rendered once per key
            bare = ExecutorRequest(
                kind, task, Context(observed=observed), draft="" if kind in ("revise", "judge") else None
            )
            prompts = self.prompts
            size = self._cached(
                self._fixed, key, lambda: sum(len(m["content"]) for m in prompts.messages(bare))
            )
        return size

    def prompt_chars(self, request: ExecutorRequest) -> int:
        task, context, prompts = request.task, request.context, self.prompts
        chars = self._fixed_part(request)
        if prompts is None:
            items = len(context.evidence) + len(context.tool_results)
            return chars + len(request.draft or "") + FALLBACK_ITEM_CHARS * items
        task_id = task.task_id
        if context.evidence:
            chars += SEPARATOR + EVIDENCE_HEADING + SEPARATOR * (len(context.evidence) - 1)
            items = self._items
            for item in context.evidence:
                size = items.get((task_id, item))
                if size is None:
                    size = self._cached(
                        items,
                        (task_id, item),
                        lambda item=item: len(f"[{item}]\n{prompts.evidence_text(task, item).strip()}"),
                    )
                chars += size
        shown = 0
        tools = self._tools
        for result in context.tool_results:  # a harness error is not shown: size -1
            size = tools.get((task_id, result))
            if size is None:
                size = self._cached(
                    tools,
                    (task_id, result),
                    lambda result=result: (
                        -1 if is_harness_error(result) else len(prompts.tool_text(task, result).strip())
                    ),
                )
            if size >= 0:
                chars += size
                shown += 1
        if shown:
            chars += SEPARATOR + TOOLS_HEADING + SEPARATOR * (shown - 1)
        if request.kind in ("revise", "judge") and request.draft:
            chars += len(request.draft.rstrip("\n"))
        if request.kind == "revise":
            chars += feedback_chars(request.feedback, request.draft)
        return chars


def feedback_chars(feedback: Feedback | None, draft: str | None) -> int:
    """What the feedback section of a REVISE prompt adds (only fresh feedback on this draft is shown)."""
    if feedback is None or draft is None or not feedback.localizes(artifact_hash(draft)):
        return 0
    real = [issue for issue in feedback.issues if not is_harness_error(issue)]
    if not real:
        return 0
    heading = len(f"## Problems reported by the harness ({feedback.source})\n")
    return SEPARATOR + heading + sum(len(issue) + 2 for issue in real) + len(real) - 1


def prompt_tokens(costs: CallCosts, chars: int) -> int:
    return round(chars / costs.prompt_chars_per_token)


def completion_tokens(costs: CallCosts, kind: RequestKind, reply_chars: int) -> int:
    """A judge writes a verdict with a reason (``judge_completion_tokens``); otherwise the reply's size."""
    if kind == "judge":
        return costs.judge_completion_tokens
    return max(1, round(reply_chars / costs.completion_chars_per_token))
