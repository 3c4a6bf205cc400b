"""What the observation layout v2 reads off a task and a check: the shared part of every domain's
``harness_gym/domains/<domain>/features.py``, which its Domain class declares
(``Domain.features = declare(name, module)``).

Each domain's module declares ``TASK_FEATURES`` (name and meaning of each task slot, at most
``core.state.TASK_SLOTS``), ``task_features(text)`` (their values, each in [0, 1], computed from the task
text the executor's prompt shows and from nothing else: ``Prompts.task_text``) and ``COMPONENTS`` (each
check component of its findings -> the ``core.state.CHECK_GROUPS`` group it reports on). A real harness
has that text before it acts, so a controller may read it; hidden fields (difficulty, flaw kinds, the
reference) never enter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType

from harness_gym.core.state import CHECK_GROUPS, TASK_SLOTS
from harness_gym.executors.base import JUDGE, Finding

SHARED_COMPONENTS: Mapping[str, str] = {JUDGE: "judge"}
"""Components every domain may report: the LLM judge's bare verdict."""


def scaled(count: float, cap: float) -> float:
    """``count`` clipped to [0, cap] and divided by ``cap``: a count as a feature in [0, 1]."""
    return min(max(float(count), 0.0), cap) / cap


def flag(found: object) -> float:
    """1.0 when ``found`` is truthy (a regex match, a non-empty list), else 0.0."""
    return 1.0 if found else 0.0


def section(text: str, heading: str) -> list[str]:
    """The ``- `` item lines right under the line starting with ``heading`` (until the first other line)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(heading):
            items = []
            for item in lines[i + 1 :]:
                if not item.startswith("- "):
                    break
                items.append(item[2:])
            return items
    return []


def line_after(text: str, label: str) -> str:
    """The rest of the first line that starts with ``label`` ("" when none does)."""
    match = re.search(rf"^{re.escape(label)}(.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


@dataclass(frozen=True)
class DomainFeatures:
    """One domain's task features and check-component groups (from its ``features`` module)."""

    domain: str
    names: tuple[tuple[str, str], ...]
    """``(name, meaning)`` of each task slot the domain uses, in slot order."""
    extract: Callable[[str], tuple[float, ...]]
    components: Mapping[str, str]

    def task_vector(self, text: str) -> tuple[float, ...]:
        """The ``TASK_SLOTS`` task features of ``text`` (slots past the domain's own are 0)."""
        values = tuple(float(v) for v in self.extract(text))
        if len(values) != len(self.names) or not all(0.0 <= v <= 1.0 for v in values):
            raise ValueError(f"{self.domain}: task features must be {len(self.names)} values in [0, 1]")
        return values + (0.0,) * (TASK_SLOTS - len(values))

    def failed_groups(self, issues: Iterable[str]) -> tuple[float, ...]:
        """1.0 per ``CHECK_GROUPS`` group some finding in ``issues`` comes from, else 0.0 (untagged
        issues, the harness's own errors, belong to no group)."""
        found = set()
        for issue in issues:
            if isinstance(issue, Finding):
                group = self.components.get(issue.component) or SHARED_COMPONENTS.get(issue.component)
                if group is None:
                    raise ValueError(
                        f"{self.domain}: check component {issue.component!r} has no group in "
                        f"harness_gym.domains.{self.domain}.features.COMPONENTS"
                    )
                found.add(group)
        return tuple(1.0 if group in found else 0.0 for group in CHECK_GROUPS)


def declare(domain: str, module: ModuleType) -> DomainFeatures:
    """The features a domain declares in its ``features`` module (``domain``: its name), checked once, when
    the domain class is defined."""
    names = tuple(module.TASK_FEATURES)
    if len(names) > TASK_SLOTS:
        raise ValueError(f"{domain}: {len(names)} task features, the layout has {TASK_SLOTS} slots")
    bad = {c: g for c, g in module.COMPONENTS.items() if g not in CHECK_GROUPS}
    if bad:
        raise ValueError(f"{domain}: check components with unknown groups {bad}; groups: {CHECK_GROUPS}")
    return DomainFeatures(domain, names, module.task_features, dict(module.COMPONENTS))
