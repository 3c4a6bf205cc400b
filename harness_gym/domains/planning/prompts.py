"""Planning's chat protocol: the problem statement in, one action per line out.

The prompt already states the initial state, the goal, every constraint and the plan format, so OBSERVE
adds nothing to it. Replies are reduced to their action lines (``move(x, y)``, ``drive(t, a, b)``, ...)
in the reference's form: lower case, ``", "`` between arguments, list markers and emphasis dropped.
"""

from __future__ import annotations

import re

from harness_gym.core.task import Task
from harness_gym.domains.planning.world import make_world
from harness_gym.domains.prompts import SettingPrompts
from harness_gym.executors.prompts import STRINGS, ParseError, fenced_blocks, object_schema

_DECORATION = re.compile(r"^(?:[\s>*_`]|[-+\u2022]\s|\d+\s*[.):]\s|step\s*\d+\s*[.):\-]\s*)*", re.I)
_TRAILER = re.compile(r"\s*(?:(?:#|//|--|->|-\s|[\u2192\u2014\u2013(]).*)?$")
"""A comment after an action (``# clears b``, ``-> b is clear``, `` - clears b``) is dropped; any other
text voids the line."""
_FORMS = {
    "blocks": "move(X, Y)",
    "logistics": "drive(T, FROM, TO), load(P, T, L) or unload(P, T, L)",
}
_EXAMPLES = {
    "blocks": "move(<block>, <block>)\nmove(<block>, table)",
    "logistics": (
        "load(<package>, <truck>, <place>)\ndrive(<truck>, <from>, <to>)\nunload(<package>, <truck>, <place>)"
    ),
}
"""Plan lines with placeholders (no object of the task to copy)."""


class PlanningPrompts(SettingPrompts):
    artifact_instruction = (
        "Reply with the plan only, one action per line in the exact form the task gives (a ``` fence "
        "around it is fine)."
    )

    def artifact_form(self, task: Task) -> str | None:
        return _EXAMPLES.get(task.payload["kind"])

    def artifact_schema(self, task: Task) -> dict:
        """The plan's actions, one string each."""
        return object_schema({"plan": STRINGS})

    def artifact_text(self, task: Task, obj: dict) -> str:
        return "\n".join(str(step) for step in obj["plan"])

    def _actions(self, task: Task) -> tuple[str, ...]:
        payload = task.payload

        def build() -> tuple[str, ...]:
            world = make_world(payload["kind"], payload["problem"], payload["constraints"])
            return tuple(world.signatures)

        return self.domain.per_task("prompt_actions", task, build)

    def artifact(self, task: Task, reply: str) -> str:
        names = "|".join(re.escape(name) for name in self._actions(task))
        step = re.compile(rf"({names})\s*\(([^()]*)\)[\s*_`]*[.;,]?", re.I)
        chunks = [b for b in fenced_blocks(reply) if self._steps(b, step)]
        steps = self._steps(chunks[-1] if chunks else reply, step)
        if not steps:
            form = _FORMS.get(task.payload["kind"], "the actions the task names")
            raise ParseError(f"no plan lines of the form {form}")
        return "\n".join(steps)

    @staticmethod
    def _steps(text: str, step: re.Pattern[str]) -> list[str]:
        """Each line that is exactly one action (around list markers, emphasis and a trailing comment)."""
        out = []
        for raw in text.splitlines():
            line = _DECORATION.sub("", raw)
            match = step.match(line)
            if match is None or not _TRAILER.fullmatch(line, match.end()):
                continue
            args = match.group(2).strip()
            parts = [arg.strip().strip("*_`").lower() for arg in args.split(",")] if args else []
            out.append(f"{match.group(1).lower()}({', '.join(parts)})")
        return out
