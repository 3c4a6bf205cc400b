"""Re-read recorded replies with the parsers of the code on ``PYTHONPATH``: parse failures per recorded
reply, offline, so a parser change is measured on what a real model actually wrote, and what went wrong.

Every entry of a response cache (``harness_gym/executors/cache.py``) holds the messages sent and the raw
reply. The task is found by its prompt in the user message, the request kind from the closing
instruction; the reply then goes through that domain's ``Prompts.parse``. Run it once with the old code
and once with the new one on the same cache to compare:

    PYTHONPATH=/path/to/old python benchmarks/real_llm/reparse.py tests/data/smollm2_cache.sqlite
    PYTHONPATH=. python benchmarks/real_llm/reparse.py tests/data/smollm2_cache.sqlite --show

Each reply is also put in one class (first match, in this order), so a table says *why* replies fail:

- parsed, ``copies the example``: the artifact holds a placeholder of a format example (``First Last``,
  ``doc-NNN``, ``<number>``, ...): read, but the model filled in nothing of its own;
- truncated: ``runs past max_tokens`` (in practice a reply looping over a list or the prompt);
- failed: ``asks for the task`` ("I'm ready to help. What's the task?"), ``echoes the prompt`` (its first
  line is copied from the request, or it opens with a Markdown heading), ``partial labelled answer``
  (some of the required labels), ``malformed JSON``, ``judge without a verdict``, else ``prose without
  the form``.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium as gym

import harness_gym
from harness_gym.executors.base import Context, ExecutorRequest
from harness_gym.executors.prompts import ParseError

PLACEHOLDERS = (
    "First Last",
    "MEMO-000",
    "doc-NNN",
    "your answer",
    "<answer>",
    "<number>",
    "<value>",
    "sNN",
    "<block>",
    "<tool>",
    "<columns>",
    "(2 + 3) * 4",
)
"""Values only a format example holds (the task prompts' examples and the reply forms)."""
_ASKS = re.compile(
    r"ready to (help|assist)|what('s| is) (the|your)( next)? (task|question|plan)"
    r"|what can i (do|help|assist)",
    re.IGNORECASE,
)


def request_kind(user: str) -> str:
    """The request kind from the closing instruction (worded alike by every version of the prompts,
    under "## Your turn" or "## Instruction")."""
    turn = re.split(r"^## (?:Your turn|Instruction)$", user, flags=re.M)[-1]
    if "PASS" in turn and "FAIL" in turn:
        return "judge"
    if "tool call" in turn:
        return "tool"
    if "## Current draft" in user and "Revise" in turn:
        return "revise"
    return "draft"


def failure_class(reply: str, user: str, kind: str, error: str) -> str:
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if _ASKS.search(reply):
        return "asks for the task"
    if first.startswith("#") or (len(first) >= 20 and first in user):
        return "echoes the prompt"
    if kind == "judge":
        return "judge without a verdict"
    if error.startswith("missing"):
        return "partial labelled answer"
    if "{" in reply and "JSON" in error:
        return "malformed JSON"
    return "prose without the form"


class Tasks:
    """Every task of the eight settings, found by its prompt."""

    def __init__(self) -> None:
        self.by_env: dict[str, Any] = {}
        for env_id in harness_gym.ENV_IDS:
            env = gym.make(env_id, split="all")
            self.by_env[env_id] = env.unwrapped
            env.close()

    def find(self, user: str) -> tuple[str, Any]:
        head = user.split("## Task\n", 1)[-1]
        for env_id, env in self.by_env.items():
            for task in env.tasks:
                if head.startswith(task.prompt.strip()):
                    return env_id, task
        raise LookupError("no task's prompt opens this request: " + head[:120])


def reparse(cache: Path, show: bool = False) -> tuple[dict[str, dict[str, Any]], Counter]:
    """Per setting: replies, parse failures, truncated; and the count of every class."""
    tasks = Tasks()
    rows: dict[str, Counter] = {}
    classes: Counter = Counter()
    with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:
        query = "SELECT text, finish_reason, request FROM responses ORDER BY created_at"
        entries = db.execute(query).fetchall()
    for text, finish_reason, request in entries:
        messages = json.loads(request)["messages"]
        user = messages[-1]["content"]
        env_id, task = tasks.find(user)
        kind = request_kind(user)
        count = rows.setdefault(env_id, Counter())
        count["replies"] += 1
        if finish_reason == "length":
            count["truncated"] += 1
            outcome = "truncated: runs past max_tokens"
        else:
            env = tasks.by_env[env_id]
            prompts = env.domain.prompts_cls(env.domain)
            try:
                artifact = prompts.parse(ExecutorRequest(kind, task, Context()), text)
            except ParseError as exc:
                count["parse_failures"] += 1
                outcome = f"failed: {failure_class(text, user, kind, str(exc))}"
            else:
                copied = any(p in artifact for p in PLACEHOLDERS)
                outcome = "parsed: copies the example" if copied else "parsed"
        classes[outcome] += 1
        if show:
            print(f"--- {env_id} {kind}: {outcome}\n{text[:400]}\n")
    table = {
        env_id: {
            "replies": c["replies"],
            "parse_failures": c["parse_failures"],
            "truncated": c["truncated"],
            "parse_failures_per_reply": c["parse_failures"] / c["replies"],
        }
        for env_id, c in rows.items()
    }
    return table, classes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path)
    parser.add_argument("--show", action="store_true", help="print every reply with its class")
    parser.add_argument("--json", type=Path, help="write the tables as JSON")
    args = parser.parse_args()
    rows, classes = reparse(args.cache, args.show)
    print("| setting | replies | parse failures | truncated | parse failures / reply |")
    print("| --- | ---: | ---: | ---: | ---: |")
    total: Counter = Counter()
    for env_id, row in rows.items():
        total.update({k: row[k] for k in ("replies", "parse_failures", "truncated")})
        print(
            f"| {env_id} | {row['replies']} | {row['parse_failures']} | {row['truncated']} "
            f"| {row['parse_failures_per_reply']:.2f} |"
        )
    print(
        f"| all | {total['replies']} | {total['parse_failures']} | {total['truncated']} "
        f"| {total['parse_failures'] / max(1, total['replies']):.2f} |"
    )
    print("\n| class | replies |\n| --- | ---: |")
    for outcome, n in sorted(classes.items()):
        print(f"| {outcome} | {n} |")
    if args.json:
        args.json.write_text(json.dumps({"settings": rows, "classes": classes}, indent=1) + "\n")


if __name__ == "__main__":
    main()
