"""Coding's chat protocol: the spec (plus starter code and visible tests once observed) in, Python out.

The artifact is the module source the verifier runs: imports, helpers and ``def <function_name>(...)``.
A reply whose code does not parse is still an artifact (the verifier scores it 0 on parseability);
only a reply with no code defining the function raises :class:`ParseError`.
"""

from __future__ import annotations

import ast
import re
import textwrap

from harness_gym.core.task import Task
from harness_gym.domains.coding.verifier import describe_test
from harness_gym.executors.prompts import STRING, ParseError, Prompts, fenced_blocks, object_schema

_PYTHON = ("python", "py", "python3")
_CODE_START = re.compile(r"^(?:import\s|from\s+\S+\s+import\s|(?:async\s+)?def\s|class\s|@)")
_CODE_LINE = re.compile(
    r"^(?:[ \t#]|(?:import|from|def|async|class|return|if|elif|else|for|while|try|except|finally|with)\b"
    r"|@|[A-Za-z_][\w.,\[\] ]*(?::[^=]*)?=[^=]|[)\]}\"'])"
)


def _defines(source: str, name: str) -> bool:
    return re.search(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(", source, re.M) is not None


def _without_self_tests(source: str) -> str:
    """Drop top-level ``assert``s and ``print(...)`` calls: example usage an LLM appends, which could only
    crash the module before the real tests run."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    drop: set[int] = set()
    for node in tree.body:
        is_print = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "print"
        )
        if isinstance(node, ast.Assert) or is_print:
            drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    if not drop:
        return source
    lines = [line for i, line in enumerate(source.splitlines(), start=1) if i not in drop]
    return "\n".join(lines)


def _tidy(source: str) -> str:
    source = textwrap.dedent(source.replace("\r\n", "\n")).strip("\n")
    return _without_self_tests(source).rstrip() + "\n"


class CodingPrompts(Prompts):
    artifact_instruction = (
        "Reply with the complete Python implementation (the function and any imports or helpers it "
        "needs) in one ```python fence."
    )

    def task_text(self, task: Task, observed: bool) -> str:
        if not observed:
            return task.prompt
        payload = task.payload
        starter = f"{task.prompt}\n\nStarter code:\n```python\n{payload['starter_code'].rstrip()}\n```\n\n"
        if payload.get("judged"):  # MDP v2: a task with no visible test
            return starter + "No visible tests: hidden tests decide the score."
        tests = "\n".join(describe_test(payload["function_name"], t) for t in payload["visible_tests"])
        return starter + f"Visible tests (more hidden tests decide the score):\n```python\n{tests}\n```"

    def artifact_schema(self, task: Task) -> dict:
        return object_schema({"code": STRING})

    def artifact_text(self, task: Task, obj: dict) -> str:
        return f"```python\n{obj['code']}\n```"

    def artifact(self, task: Task, reply: str) -> str:
        name = task.payload["function_name"]
        blocks = [b for b in fenced_blocks(reply, _PYTHON) if _defines(b, name)]
        if blocks:
            return _tidy(blocks[-1])
        code = self._unfenced(reply)
        if code is not None and _defines(code, name):
            return _tidy(code)
        raise ParseError(f"no ```python fence or code defining {name}(...)")

    @staticmethod
    def _unfenced(reply: str) -> str | None:
        """Code written without a fence (or in one left unclosed): from the first line that starts a
        definition or import up to the first unindented line that reads as prose."""
        lines = reply.replace("\r\n", "\n").split("\n")
        start = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), None)
        if start is None:
            return None
        end = start + 1
        while end < len(lines):
            line = lines[end]
            if line.strip() and not _CODE_LINE.match(line):
                break
            end += 1
        return "\n".join(lines[start:end])
