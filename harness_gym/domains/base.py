"""What the settings share: presets of their class headers and the plumbing of their hooks.

A setting's ``Domain`` declares only what differs. It starts from :class:`SettingDomain` (the plain
setting, as planning is; it derives ``env_id`` and ``task_file`` from ``name``) or from one of its two
presets:

- :class:`EvidenceSetting`: evidence comes from RETRIEVE (research, long memory, knowledge work,
  tau-retail): the evidence events, ``evidence_required`` and the Base script OBSERVE, RETRIEVE, DRAFT,
  SUBMIT;
- :class:`ToolSetting`: a tool is run with CALL_TOOL (DB-Bench, multi-tool, coding): the tool events and
  the Base script OBSERVE, CALL_TOOL, DRAFT, SUBMIT.

Event sets are named (``CORE_EVENTS`` and the sets built on it), so a setting adds to one rather than
spelling all of them. :func:`check_outcome` and :func:`with_judge` are the two halves of every CHECK,
:class:`UpstreamAdapter` is what the public-benchmark adapters share (``data_path``, ``n_train``,
``n_eval``), and :func:`read_toml` reads a setting's data file (problem definitions that are data live
beside the code that reads them). :func:`form` and :func:`content` spell a setting's flaw kinds
(``Domain.flaws``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib import resources
from typing import Any

from harness_gym.core.actions import Action
from harness_gym.core.task import Task
from harness_gym.envs.domain import Domain, Episode, Outcome
from harness_gym.executors.base import Feedback, Finding, FlawKind

CORE_EVENTS = frozenset({"CheckBeforeSubmit", "RevisionAfterFailure", "StopWhenSufficient", "EarlySubmit"})
"""The HMS events that apply in every setting (planning has only these)."""
EVIDENCE_EVENTS = CORE_EVENTS | {"EvidenceBeforeClaim"}
"""A setting whose artifact makes claims that gathered evidence should back."""
TOOL_EVENTS = CORE_EVENTS | {"ValidToolUse"}
"""A setting whose tool calls can be invalid."""
TEST_EVENTS = CORE_EVENTS | {"TestBeforeSubmit"}
"""A setting whose tool runs tests on the draft (coding)."""

# Steps of a Base script (``Domain.base_script``): an action and the feature that says it was done.
OBSERVED = (Action.OBSERVE, "observed")
DRAFTED = (Action.DRAFT, "has_draft")
SUBMITTED = (Action.SUBMIT, None)

N_TRAIN, N_EVAL = 16, 20
"""Tasks an adapter takes from upstream files by default, per split (the generated task sets' sizes)."""


JUDGED_CALLS = {Action.DRAFT: "draft", Action.REVISE: "revise", Action.CHECK: "judge"}
"""``Domain.calls`` of a setting whose CHECK asks the LLM judge."""


class SettingDomain(Domain):
    """A setting of the suite: the plain one (as planning is) unless a preset or the class says otherwise.

    It supports neither RETRIEVE nor CALL_TOOL, has the core events, and Base observes, drafts and
    submits. ``env_id`` and ``task_file`` follow from ``name`` unless the class sets them.

    ``name = "long_memory"`` gives ``env_id = "HarnessLongMemory-v0"`` and ``task_file =
    "long_memory-v0.jsonl"``:

    >>> from harness_gym.domains.long_memory import LongMemoryDomain
    >>> LongMemoryDomain.env_id, LongMemoryDomain.task_file
    ('HarnessLongMemory-v0', 'long_memory-v0.jsonl')
    """

    supported = frozenset({Action.OBSERVE, Action.DRAFT, Action.CHECK, Action.REVISE, Action.SUBMIT})
    events = CORE_EVENTS
    base_script = (OBSERVED, DRAFTED, SUBMITTED)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            title = "".join(part.capitalize() for part in cls.name.split("_"))
            cls.env_id = cls.__dict__.get("env_id", f"Harness{title}-v0")
            cls.task_file = cls.__dict__.get("task_file", f"{cls.name}-v0.jsonl")


class EvidenceSetting(SettingDomain):
    """Preset of the settings whose evidence comes from RETRIEVE; Base retrieves once before drafting."""

    supported = SettingDomain.supported | {Action.RETRIEVE}
    calls = JUDGED_CALLS
    events = EVIDENCE_EVENTS
    evidence_required = True
    base_script = (OBSERVED, (Action.RETRIEVE, "evidence"), DRAFTED, SUBMITTED)


class ToolSetting(SettingDomain):
    """Preset of the settings with a tool to run (CALL_TOOL); Base runs it once before drafting."""

    supported = SettingDomain.supported | {Action.CALL_TOOL}
    events = TOOL_EVENTS
    base_script = (OBSERVED, (Action.CALL_TOOL, "tool_calls"), DRAFTED, SUBMITTED)


class UpstreamAdapter(SettingDomain):
    """A public benchmark's adapter: its generated tasks, or ``n_train`` / ``n_eval`` of upstream's files.

    ``data_path`` names the directory of upstream files; a subclass reads them in ``upstream_tasks``.
    """

    def __init__(
        self, data_path: str | None = None, n_train: int = N_TRAIN, n_eval: int = N_EVAL, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.data_path = data_path
        self.n_train, self.n_eval = int(n_train), int(n_eval)

    def tasks(self, obs_layout: str = "v1") -> list[Task]:
        """Upstream's tasks when ``data_path`` is given (the same for either MDP), else the generated set."""
        return super().tasks(obs_layout) if self.data_path is None else self.upstream_tasks()

    def upstream_tasks(self) -> list[Task]:
        """The tasks read from ``data_path``."""
        raise NotImplementedError


def form(*named_by: str, needs: str = "none") -> FlawKind:
    """A flaw of the artifact's form (malformed output, a syntax error, a missing field, the format),
    named by the findings of ``named_by``; by default its fix needs nothing gathered."""
    return FlawKind("form", frozenset(named_by), needs)


def content(*named_by: str, needs: str = "informedness") -> FlawKind:
    """A flaw of the artifact's content (a wrong value, logic or step), named by the findings of
    ``named_by``; by default its fix needs what a first draft needs (the domain's informedness)."""
    return FlawKind("content", frozenset(named_by), needs)


GROUNDING_WEIGHT = 0.5
"""Maximum of the ``grounding`` criterion (assumption: the weight of the format criteria of research and
long memory). A draft that states what only an unopened source or record could tell is an unverified
claim, whatever its truth: a model cannot know a source's content without reading it, and RAG evaluation
scores faithfulness to the retrieved context for the same reason."""


def grounding(issues: Iterable[str], components: frozenset[str]) -> dict[str, tuple[float, float]]:
    """The ``grounding`` criterion: full when the structural check reports none of ``components`` (the
    findings that say the draft relies on something the harness never opened)."""
    named = {issue.component for issue in issues if isinstance(issue, Finding)}
    return {"grounding": (0.0 if named & components else GROUNDING_WEIGHT, GROUNDING_WEIGHT)}


def read_toml(package: str, name: str) -> dict[str, Any]:
    """A data file shipped beside a setting's code (``harness_gym/domains/<setting>/<name>``)."""
    with resources.files(package).joinpath(name).open("rb") as handle:
        return tomllib.load(handle)


def with_judge(ep: Episode, items: Iterable[bool], issues: Iterable[str]) -> tuple[int, int, tuple[str, ...]]:
    """Observable check items plus an LLM judge call (the executor) as one more: (passed, total, issues)."""
    items = tuple(items)
    passed, issue = ep.judge()
    return sum(items) + passed, len(items) + 1, (*issues, *(() if issue is None else (issue,)))


def check_outcome(ep: Episode, text: str, coverage: float, issues: Iterable[str], **fields: Any) -> Outcome:
    """What CHECK reports: the coverage of its items, and its issues as a failure signal and as the
    feedback the next REVISE gets (``fields`` adds e.g. a test count)."""
    assert ep.draft_hash is not None
    issues = tuple(issues)
    return Outcome(
        text=text,
        check={"coverage": coverage, "missing": 1.0 - coverage},
        issues=issues,
        failure=bool(issues),
        feedback=Feedback("check", ep.draft_hash, issues),
        **fields,
    )
