"""The harness state and its fixed observation layout (the one place ``FEATURES`` is defined).

Every feature is something a real harness can observe about its own trajectory: what it has done,
what its tools and checks reported. Nothing here reveals gold labels, hidden references, hidden tests
or whether the current draft is correct. The layout is shared by every environment id, so one
controller can act in all of them; never reorder it silently (append, and bump the env version).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter

import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action

DOMAINS: tuple[str, ...] = (
    "knowledge_work",
    "coding",
    "research",
    "multi_tool",
    "long_memory",
    "planning",
    "tau_retail",
    "dbbench",
)

# Counts are scaled as min(count, cap) / cap so every feature lies in [-1, 1].
COUNT_CAPS = {"revisions": 4, "evidence": 5, "tool_calls": 5, "test_failures": 5, "errors": 5}

_CORE: tuple[tuple[str, str], ...] = (
    ("progress", "steps taken / max_steps"),
    ("budget_left", "1 - cost spent / cost budget, clipped at 0"),
    ("has_draft", "1 once a draft exists"),
    ("revisions", "REVISE calls so far (scaled, cap 4)"),
    ("observed", "1 once the task inputs were observed"),
    ("evidence", "evidence items gathered (scaled, cap 5)"),
    ("tool_calls", "tool calls made (scaled, cap 5)"),
    ("last_tool_ok", "outcome of the last tool call: 1 ok, 0 failed, -1 none yet"),
    ("checked_draft", "1 if CHECK ran on the current draft"),
    ("check_coverage", "fraction of check items satisfied at the last CHECK, -1 never checked"),
    ("check_missing", "fraction of check items missing at the last CHECK, -1 never checked"),
    ("tested_draft", "1 if tests ran on the current draft"),
    ("test_pass_rate", "pass rate of the last test run, -1 none yet"),
    ("test_failures", "failing tests in the last run (scaled, cap 5)"),
    ("errors", "invalid actions, invalid tool calls and executor errors (scaled, cap 5)"),
    ("unresolved_failure", "1 while a failure signal has not been followed by DRAFT or REVISE"),
)

FEATURES: tuple[str, ...] = (
    *(name for name, _ in _CORE),
    *(f"last_action_{a.name.lower()}" for a in Action),
    *(f"domain_{d}" for d in DOMAINS),
)
"""Name of each observation index, in order."""

LAYOUT_VERSION = 1
"""Version of the ``FEATURES`` layout: bumped whenever a feature is added, removed or moved. Saved models
record it (with the names), and a model is refused on a layout other than the one it was trained on."""

TASK_SLOTS = 6
"""Task-feature slots of layout v2; each domain fills the first (``harness_gym.domains.<d>.features``)."""
CHECK_GROUP_DOCS: dict[str, str] = {
    "form": "the draft's form (format, fields, syntax, signature)",
    "content": "the draft's content (a value, a step, the logic)",
    "evidence": "the draft's evidence and grounding (citations, sources read, tool outputs used)",
    "tests": "tests (a failing or erroring visible test)",
    "judge": "the LLM judge (a bare FAIL verdict)",
}
"""What a check component reports on (``harness_gym.domains.<d>.features.COMPONENTS`` maps each to one)."""
CHECK_GROUPS: tuple[str, ...] = tuple(CHECK_GROUP_DOCS)
PROMPT_CHARS_SCALE = 8192
"""Characters of task text that make ``prompt_length`` 1."""
TOKENS_SCALE = 16384
"""Executor tokens that make ``tokens_spent`` 1."""

_V2: tuple[tuple[str, str], ...] = (
    (
        "prompt_length",
        f"characters of the task text the executor's prompt shows / {PROMPT_CHARS_SCALE}, capped at 1 "
        "(that text grows once OBSERVE has read the inputs)",
    ),
    *(
        (
            f"task_{i}",
            f"task feature {i} of the domain, read off the same task text (the environment's task-feature "
            "table; 0 where the domain has fewer)",
        )
        for i in range(TASK_SLOTS)
    ),
    *(
        (
            f"check_failed_{group}",
            f"1 if the last CHECK or test run had a finding on {doc}, 0 if not, -1 none run yet",
        )
        for group, doc in CHECK_GROUP_DOCS.items()
    ),
    ("tokens_spent", f"executor tokens (prompt + completion) spent so far / {TOKENS_SCALE}, capped at 1"),
    ("tokens_left", "1 - tokens spent / token_budget, clipped at 0; -1 without a token_budget"),
)

FEATURES_V2: tuple[str, ...] = FEATURES + tuple(name for name, _ in _V2)
"""Layout v2 (``gym.make(id, obs_layout="v2")``): layout v1 followed by what a harness reads off the task
text, which check components failed and the tokens it spent. Same width in every environment."""
LAYOUT_VERSION_V2 = 2
LAYOUTS: dict[str, tuple[str, ...]] = {"v1": FEATURES, "v2": FEATURES_V2}
"""The observation layouts by ``obs_layout`` name (v1 is the default and the datasets' layout)."""
LAYOUT_VERSIONS: dict[str, int] = {"v1": LAYOUT_VERSION, "v2": LAYOUT_VERSION_V2}

FEATURE_DOCS: dict[str, str] = {
    **dict(_CORE),
    **{f"last_action_{a.name.lower()}": f"1 if the previous action was {a.name}" for a in Action},
    **{f"domain_{d}": f"1 in the {d} environment" for d in DOMAINS},
    **dict(_V2),
}

N_FEATURES = len(FEATURES)
FEATURE_INDEX = {name: i for i, name in enumerate(FEATURES)}
_LAST_ACTION = FEATURE_INDEX["last_action_observe"]
_DOMAIN = FEATURE_INDEX["domain_knowledge_work"]
_N_CORE = len(_CORE)


_ZEROS = np.zeros(N_FEATURES, dtype=np.float32)
_CAP_REVISIONS, _CAP_EVIDENCE, _CAP_TOOL_CALLS, _CAP_TEST_FAILURES, _CAP_ERRORS = (
    COUNT_CAPS[name] for name in ("revisions", "evidence", "tool_calls", "test_failures", "errors")
)


@dataclass(slots=True)
class HarnessState:
    """Counters and flags the harness keeps about its own episode."""

    domain: str
    max_steps: int
    cost_budget: float
    t: int = 0
    cost: float = 0.0
    has_draft: bool = False
    revisions: int = 0
    observed: bool = False
    evidence: int = 0
    tool_calls: int = 0
    last_tool_ok: float = -1.0
    checked_draft: bool = False
    check_coverage: float = -1.0
    check_missing: float = -1.0
    tested_draft: bool = False
    test_pass_rate: float = -1.0
    test_failures: int = 0
    errors: int = 0
    unresolved_failure: bool = False
    last_action: int | None = None
    _domain_index: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"unknown domain {self.domain!r}; expected one of {DOMAINS}")
        self._domain_index = DOMAINS.index(self.domain)

    def vector(self) -> np.ndarray:
        """The observation, laid out as ``FEATURES`` (a new array; each distinct state's is built once, since
        states recur across steps and episodes and a copy is several times cheaper than filling one)."""
        key = _STATE_KEY(self)
        obs = _VECTORS.get(key)
        if obs is None:
            if len(_VECTORS) >= _VECTORS_LIMIT:
                _VECTORS.clear()
            obs = _VECTORS[key] = self._fill()
        return obs.copy()

    def _fill(self) -> np.ndarray:
        obs = _ZEROS.copy()
        obs[:_N_CORE] = (
            self.t / self.max_steps,
            max(0.0, 1.0 - self.cost / self.cost_budget),
            self.has_draft,
            min(self.revisions, _CAP_REVISIONS) / _CAP_REVISIONS,
            self.observed,
            min(self.evidence, _CAP_EVIDENCE) / _CAP_EVIDENCE,
            min(self.tool_calls, _CAP_TOOL_CALLS) / _CAP_TOOL_CALLS,
            self.last_tool_ok,
            self.checked_draft,
            self.check_coverage,
            self.check_missing,
            self.tested_draft,
            self.test_pass_rate,
            min(self.test_failures, _CAP_TEST_FAILURES) / _CAP_TEST_FAILURES,
            min(self.errors, _CAP_ERRORS) / _CAP_ERRORS,
            self.unresolved_failure,
        )
        if self.last_action is not None:
            obs[_LAST_ACTION + self.last_action] = 1.0
        obs[_DOMAIN + self._domain_index] = 1.0
        return obs


_STATE_KEY = attrgetter(*(f.name for f in fields(HarnessState)))
"""Every field of a state, as a tuple: the key of its vector (a field added later is in it by itself)."""
_VECTORS: dict[tuple, np.ndarray] = {}
"""Observation vectors by the state fields they are made of (``HarnessState.vector``); equal keys give equal
vectors (``True``, ``1`` and ``1.0`` all become 1.0)."""
_VECTORS_LIMIT = 50_000
"""Cleared when this full (a few hundred bytes an entry)."""


N_FEATURES_V2 = len(FEATURES_V2)
_NO_CHECK = (-1.0,) * len(CHECK_GROUPS)
_ZEROS_V2 = np.zeros(N_FEATURES_V2, dtype=np.float32)


@dataclass(slots=True)
class HarnessStateV2(HarnessState):
    """The state of layout v2: v1's counters and flags, plus what the task text shows, which check
    components failed last and the tokens spent (``FEATURES_V2``)."""

    task: tuple[float, ...] = (0.0,) * (1 + TASK_SLOTS)
    """``prompt_length`` and the task slots, as the environment read them off the task text."""
    check_failed: tuple[float, ...] = _NO_CHECK
    """Per ``CHECK_GROUPS``: 1 / 0 for the last CHECK or test run, -1 before any."""
    tokens: int = 0
    token_budget: int | None = None

    def vector(self) -> np.ndarray:
        key = _STATE_KEY_V2(self)
        obs = _VECTORS.get(key)
        if obs is None:
            if len(_VECTORS) >= _VECTORS_LIMIT:
                _VECTORS.clear()
            obs = _VECTORS[key] = self._fill_v2()
        return obs.copy()

    def _fill_v2(self) -> np.ndarray:
        obs = _ZEROS_V2.copy()
        obs[:N_FEATURES] = HarnessState._fill(self)
        budget = self.token_budget
        left = -1.0 if budget is None else max(0.0, 1.0 - self.tokens / budget)
        obs[N_FEATURES:] = (
            *self.task,
            *self.check_failed,
            min(self.tokens, TOKENS_SCALE) / TOKENS_SCALE,
            left,
        )
        return obs


_STATE_KEY_V2 = attrgetter(*(f.name for f in fields(HarnessStateV2)))


def feature_table(layout: str = "v1", start: int = 0) -> str:
    """The observation layout (``LAYOUTS``) from index ``start`` on, as a Markdown table (used in docs and
    by ``harness-gym envs``)."""
    rows = ["| index | feature | meaning |", "|---|---|---|"]
    rows += [
        f"| {i} | `{name}` | {FEATURE_DOCS[name]} |" for i, name in enumerate(LAYOUTS[layout]) if i >= start
    ]
    return "\n".join(rows)


def with_mask(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(N, F) observations and (N, N_ACTIONS) masks -> (N, F + N_ACTIONS) float32 model input.

    The input of mask-aware learners: the legal mask appended to the observation, so a network can
    condition on it (``baselines.legal``) and a wrapper can rebuild it at inference.
    """
    obs = np.asarray(observations, dtype=np.float32)
    m = np.asarray(masks)
    if obs.ndim != 2 or m.shape != (obs.shape[0], N_ACTIONS):
        raise ValueError(f"need (N, F) observations and (N, {N_ACTIONS}) masks, got {obs.shape}, {m.shape}")
    if not (m != 0).any(axis=1).all():
        raise ValueError("every mask row must allow at least one action")
    return np.concatenate([obs, (m != 0).astype(np.float32)], axis=1)
