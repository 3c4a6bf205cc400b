"""HarnessEnv: the generic Harness MDP loop, shared by every domain and adapter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.hms import EpisodeOutcome, HMSParams, detect, hms_norm
from harness_gym.core.rubric import g_norm
from harness_gym.core.state import (
    CHECK_GROUPS,
    LAYOUTS,
    N_FEATURES,
    PROMPT_CHARS_SCALE,
    HarnessState,
    HarnessStateV2,
    feature_table,
)
from harness_gym.core.task import Task, select
from harness_gym.core.trajectory import draw_steps, render_steps
from harness_gym.envs.domain import Domain, Episode, Outcome, artifact_hash, episode_key
from harness_gym.executors.base import Executor, ExecutorRequest, RequestKind
from harness_gym.executors.costs import PromptSizer, completion_tokens, prompt_tokens
from harness_gym.executors.profiles import ExecutorProfile, for_domain
from harness_gym.executors.simulated import SimulatedExecutor
from harness_gym.sandbox import require

if TYPE_CHECKING:
    from harness_gym.executors.openai_executor import OpenAIConfig

_NAMES = tuple(action.name for action in Action)
_OBSERVE, _RETRIEVE, _CALL_TOOL, _DRAFT, _CHECK, _REVISE, _SUBMIT = (int(action) for action in Action)
"""The actions as plain ints: comparing an int with one is several times cheaper than with an ``Action``."""


class InvalidActionError(ValueError):
    """Raised for a masked action when the environment was made with ``strict=True``."""


_COMMON_DOC = """
    ## Action Space

    ``Discrete(7)``: the structural harness operations of :class:`harness_gym.Action`.

    | value | action | |
    |---|---|---|
    | 0 | OBSERVE | read the task inputs |
    | 1 | RETRIEVE | gather evidence |
    | 2 | CALL_TOOL | run a tool |
    | 3 | DRAFT | ask the executor for a first draft |
    | 4 | CHECK | verify the current draft with what a harness may see |
    | 5 | REVISE | ask the executor to revise the draft, given the latest feedback |
    | 6 | SUBMIT | end the episode and score the current draft (always legal) |

    Legality is given by ``info["action_mask"]`` (int8, 1 = legal) after every ``reset`` and ``step``
    and by ``action_masks()`` (bool). An illegal action is a no-op that still costs a step, counts as an
    error (feature ``errors``) and sets ``info["invalid_action"] = True``; with ``strict=True`` it raises
    ``InvalidActionError`` instead.

    ## Observation Space

    ``Box(-1, 1, (31,), float32)`` in layout v1 (the default: ``harness_gym.FEATURES``), the same layout
    in every environment. Only what a harness can observe about its own trajectory; never gold labels or
    hidden tests.

{features}

    Layout v2 (``gym.make(id, obs_layout="v2")``: ``Box(-1, 1, (45,), float32)``,
    ``harness_gym.core.state.FEATURES_V2``) appends what a harness reads off the task text its executor's
    prompt shows (``Prompts.task_text``; never a hidden field such as the difficulty, a flaw kind or the
    reference), which check components failed, and the tokens spent. It is the MDP v2: under it a REVISE
    of a correct draft breaks it at a rate set by the feedback it got (``Mechanism.p_break_feedback``);
    layout v1 keeps the single rate, and the datasets and the paper's protocol use it.

{features_v2}
{task_features}
    ## Rewards

    0 on every step except the last, whose reward is the task quality ``G`` in [0, 1]: the normalised
    rubric score of the submitted (or, on truncation, current) draft, 0 without a draft. Process quality
    (HMS) is reported in the final info and is never part of the reward.

    With ``token_price=λ`` > 0 every step's reward is also charged ``-λ * info["tokens"] / 1000`` (λ in
    G per thousand executor tokens), so an episode's return is ``G - λ * tokens / 1000``; the final info
    then holds ``token_cost`` (``λ * tokens / 1000`` of the episode) beside ``G`` and ``usage``. Price 0
    (the default) is the paper's protocol, bit for bit.

    ## Episode End

    Terminated by SUBMIT. Truncated after ``max_steps`` steps, scoring the current draft
    (``termination_reason="budget"``). Each id is registered with ``max_episode_steps`` equal to
    ``max_steps``; ``gym.make(id, max_episode_steps=N)`` and ``gym.make(id, max_steps=N)`` both set this
    one budget, so the ``TimeLimit`` and the environment truncate on the same, scored, step. The final
    ``info`` holds ``G``, ``rubric`` {{criterion: (score, max)}}, ``hms`` {{event: {{fired, applicable}}}},
    ``hms_norm``, ``termination_reason`` (``"submit"`` | ``"budget"``), ``cost``, ``usage`` (the
    episode's executor calls, prompt and completion tokens, cost, seconds, cache hits, the calls and
    tokens sent to the model, executor errors by kind: ``harness_gym.envs.domain.EPISODE_USAGE_KEYS``),
    ``sandbox`` (the isolation model-written code ran under: ``"namespaces"``, ``"process"``, or None
    where the domain runs none) and ``trajectory`` (every step record, JSON-serialisable; a step that
    called the executor has ``usage`` too, and with a chat LLM ``executor_io``, the call's audit record).

    ## Information

    Every ``info`` holds ``action_mask`` (int8, 1 = legal), ``invalid_action``, ``tokens`` (prompt +
    completion tokens this step's executor calls cost, 0 without a call) and ``latency_s`` (their
    seconds); ``reset`` returns ``action_mask`` and ``task_id``.

    ## Arguments

    ``gym.make(id, split="train", executor="simulated", executor_profile=None, task_ids=None,
    max_steps=None, strict=False, render_mode=None, hms_params=None, token_budget=None, obs_layout="v1",
    token_price=0.0, **domain_kwargs)``

    - ``split``: ``"train"`` (80 tasks), ``"validation"`` (16 of the train tasks, for model selection:
      ``harness_gym.core.task.validation_ids``), ``"eval"`` (20 held-out tasks) or ``"all"``.
    - ``executor``: ``"simulated"`` (embedded, offline); ``"openai"``, an ``OpenAIConfig`` or an
      ``OpenAIExecutor`` (a chat LLM behind an OpenAI-compatible endpoint, with the record/replay
      cache; ``"openai"`` reads ``HARNESS_GYM_LLM_BASE_URL`` / ``_MODEL`` / ``_API_KEY``); or any object
      implementing ``Executor``.
    - ``executor_profile``: the simulated executor's parameters: an ``ExecutorProfile``, a shipped name
      (``"weak"``, ``"default"``, ``"strong"``) or a JSON file (``harness-gym calibrate`` writes one);
      default ``$HARNESS_GYM_EXECUTOR_PROFILE`` or ``"default"`` (``harness_gym.executors.profiles``).
    - ``task_ids``: restrict the tasks drawn at reset to these ids (a string is one id);
      ``reset(options={{"task_id": ...}})`` picks one; ``"episode_tag"`` (e.g. the policy's name) ends
      the episode's id, ``trajectory["episode_id"]`` = ``<env id>/<task id>/seed=<seed>[/<tag>]``, by
      which audit records and response-cache rows name it.
    - ``max_steps``: step budget (default per domain).
    - ``strict``: raise on illegal actions instead of counting them.
    - ``render_mode``: ``"ansi"`` renders the trajectory so far as text, ``"rgb_array"`` as a small
      image (actions over time, CHECK/REVISE/SUBMIT marked, G once scored; needs matplotlib).
    - ``hms_params``: ``HMSParams`` with the detector thresholds.
    - ``token_budget``: total executor tokens (prompt + completion) an episode may spend; a call that
      would exceed it is masked (its size estimated ahead from the cached prompt sizes and the longest
      reply the task's pool holds), and once no call fits only SUBMIT is legal. Layout v2 shows the
      tokens left (``tokens_left``); the simulated executor never exceeds it.
    - ``obs_layout``: ``"v1"`` (default) or ``"v2"`` (above: the observation and the revision risk of MDP v2).
    - ``token_price``: G per thousand executor tokens (prompt + completion, as the simulated executor
      prices them or the server reports them), charged on the step that spends them (see Rewards); a
      finite number >= 0, default 0.
"""


MAX_ARTIFACT_CHARS = 65_536
"""The largest draft an environment takes, in characters, in every domain: about 30 times the longest
reference artifact of the shipped tasks. A longer reply is an executor error (the draft is not replaced),
so no verifier ever sees one (a 160,000-line plan took seconds to validate)."""

RESET_OPTIONS = ("task_id", "episode_tag")
"""The keys ``reset(options=...)`` takes (both strings); any other is refused."""

_KEYWORD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "split": ((str,), "a str"),
    "task_ids": ((str, list, tuple), "a task id, a list of task ids or None"),
    "max_steps": ((int, np.integer), "an int or None"),
    "strict": ((bool,), "a bool"),
    "render_mode": ((str,), "a str or None"),
    "obs_layout": ((str,), "'v1' or 'v2'"),
}


def _check_types(**given: Any) -> None:
    """One-line TypeError for a ``gym.make`` keyword of the wrong type (a bool is not an int)."""
    for name, value in given.items():
        types, what = _KEYWORD_TYPES[name]
        if value is None and name not in ("split", "strict", "obs_layout"):
            continue
        items = [value] if isinstance(value, str) else value
        wrong = isinstance(value, bool) and bool not in types
        if (
            wrong
            or not isinstance(value, types)
            or (name == "task_ids" and not all(isinstance(x, str) for x in items))
        ):
            raise TypeError(f"{name} must be {what}, got {value!r}")


def check_token_price(price: Any) -> float:
    """``token_price`` as a float: a finite number >= 0 (G per thousand tokens), else one ValueError."""
    if isinstance(price, bool) or not isinstance(price, int | float | np.integer | np.floating):
        raise ValueError(f"token_price must be a finite number >= 0 (G per 1000 tokens), got {price!r}")
    value = float(price)
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"token_price must be a finite number >= 0 (G per 1000 tokens), got {price!r}")
    return value


def simulator_kwargs(
    executor_profile: Any = None,
    token_budget: int | None = None,
    token_price: float = 0.0,
    obs_layout: str = "v1",
) -> dict[str, Any]:
    """The ``gym.make`` keywords of the settings that change what an episode does: the executor profile
    always explicit (``None`` is ``default``, never an environment variable), the rest only when not at
    their defaults, so the paper's settings leave recorded env specs as they were."""
    kwargs: dict[str, Any] = {"executor_profile": executor_profile or "default"}
    if token_budget is not None:
        kwargs["token_budget"] = token_budget
    if token_price:
        kwargs["token_price"] = token_price
    if obs_layout != "v1":
        kwargs["obs_layout"] = obs_layout
    return kwargs


class HarnessEnv(gym.Env[np.ndarray, np.int64]):
    """A frozen LLM executor inside a harness whose structural operations the agent chooses.

    Each episode is one task of the domain. The agent picks harness operations; the executor drafts
    and revises artifacts; the domain's real verifier scores the submitted artifact.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    domain_cls: ClassVar[type[Domain]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n" + _common_doc(cls.domain_cls)

    def __init__(
        self,
        split: str = "train",
        executor: str | Executor | OpenAIConfig = "simulated",
        executor_profile: ExecutorProfile | Mapping[str, Any] | str | None = None,
        task_ids: Sequence[str] | None = None,
        max_steps: int | None = None,
        strict: bool = False,
        render_mode: str | None = None,
        hms_params: HMSParams | None = None,
        token_budget: int | None = None,
        obs_layout: str = "v1",
        token_price: float = 0.0,
        **domain_kwargs: Any,
    ) -> None:
        _check_types(
            split=split,
            task_ids=task_ids,
            max_steps=max_steps,
            strict=strict,
            render_mode=render_mode,
            obs_layout=obs_layout,
        )
        if obs_layout not in LAYOUTS:
            raise ValueError(f"obs_layout must be one of {', '.join(map(repr, LAYOUTS))}, got {obs_layout!r}")
        self.obs_layout = obs_layout
        self._v2 = obs_layout == "v2"
        if isinstance(hms_params, Mapping):
            hms_params = HMSParams.from_mapping(hms_params)
        elif hms_params is not None and not isinstance(hms_params, HMSParams):
            raise TypeError(f"hms_params must be an HMSParams or a dict, got {type(hms_params).__name__}")
        self.domain = self.domain_cls(**domain_kwargs)
        self.sandbox: str | None = require().mode if self.domain.runs_code else None
        """The isolation model-written code runs under here (``namespaces`` or ``process``; None: the
        domain runs none)."""
        self.executor_profile = for_domain(executor_profile, self.domain_cls)
        self.tasks: list[Task] = self._select_tasks(split, task_ids)
        self.split = split
        self._by_id = {task.task_id: task for task in self.tasks}
        self.max_steps = int(max_steps if max_steps is not None else self.domain.max_steps)
        self.max_steps_given = max_steps is not None
        """Whether ``max_steps`` was explicit (``gym.make``'s ``TimeLimit`` then follows it)."""
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        self.executor: Executor = self._bind_executor(executor)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; use 'ansi', 'rgb_array' or None")
        self.render_mode = render_mode
        self.strict = strict
        self.hms_params = hms_params or HMSParams()
        self.action_space = spaces.Discrete(N_ACTIONS)
        self._step_costs = tuple(self.domain.step_costs[action] for action in Action)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(len(LAYOUTS[obs_layout]),), dtype=np.float32)
        prompts = self.domain.prompts_cls
        self._prompts = prompts(self.domain) if prompts is not None else None
        if self._v2:
            if self.domain.features is None:
                raise ValueError(
                    f"obs_layout='v2' needs task features; {self.domain_cls.env_id} declares none"
                )
            self._features = self.domain.features
            self._task_rows: dict[tuple[str, bool], tuple[float, ...]] = {}
        self._ep: Episode | None = None
        self._mask = np.ones(N_ACTIONS, dtype=np.int8)
        self._final: dict[str, Any] | None = None
        if token_budget is not None and not (isinstance(token_budget, int) and token_budget > 0):
            raise ValueError(f"token_budget must be a positive integer, got {token_budget!r}")
        self.token_budget = token_budget
        self.token_price = check_token_price(token_price)
        self._sizer = PromptSizer(self.domain)
        self._longest: dict[str, int] = {}

    def _bind_executor(self, executor: str | Executor | OpenAIConfig) -> Executor:
        if executor == "simulated":
            return SimulatedExecutor(self.domain, self.executor_profile, break_by_feedback=self._v2)
        if isinstance(executor, str) and executor != "openai":
            raise ValueError(f"unknown executor {executor!r}; expected 'simulated' or 'openai'")
        # imported here: the chat client and cache stay out of ``import harness_gym``
        from harness_gym.executors.openai_executor import OpenAIConfig, OpenAIExecutor

        if executor == "openai":
            executor = OpenAIConfig()
        if isinstance(executor, OpenAIConfig):
            executor = OpenAIExecutor(executor)
        if not isinstance(executor, Executor):
            raise TypeError(
                f"executor must be 'simulated', 'openai', an OpenAIConfig or an Executor, got {executor!r}"
            )
        bind = getattr(executor, "for_domain", None)
        return bind(self.domain) if bind is not None else executor

    def _select_tasks(self, split: str, task_ids: Sequence[str] | None) -> list[Task]:
        tasks = select(self.domain.tasks(self.obs_layout), split)
        if isinstance(task_ids, str):  # one id, not a sequence of one-character ids
            task_ids = [task_ids]
        if task_ids is not None:
            by_id = {task.task_id: task for task in tasks}
            unknown = [tid for tid in task_ids if tid not in by_id]
            if unknown:
                raise ValueError(f"unknown task id(s) for {self.domain.env_id} split {split!r}: {unknown}")
            tasks = [by_id[tid] for tid in task_ids]
        if not tasks:
            raise ValueError(f"no tasks selected for {self.domain.env_id} (split={split!r})")
        return tasks

    # -- Gymnasium API -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        task_id = tag = None
        if options is not None:
            if not isinstance(options, Mapping):
                raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
            unknown = sorted(str(key) for key in options if key not in RESET_OPTIONS)
            if unknown:
                raise ValueError(f"unknown reset option(s) {unknown}; known: {', '.join(RESET_OPTIONS)}")
            for key in RESET_OPTIONS:
                value = options.get(key)
                if value is not None and not isinstance(value, str):
                    raise TypeError(f"options[{key!r}] must be a str, got {type(value).__name__}")
            task_id, tag = options.get("task_id"), options.get("episode_tag")
        rng = self.np_random
        if task_id is None:
            task = self.tasks[int(rng.integers(len(self.tasks)))]
        elif task_id in self._by_id:
            task = self._by_id[task_id]
        else:
            raise ValueError(f"unknown task id {task_id!r} for {self.domain.env_id} split {self.split!r}")
        if self._v2:
            state: HarnessState = HarnessStateV2(
                self.domain.name,
                self.max_steps,
                self.domain.cost_budget,
                task=self.task_row(task, observed=False),
                token_budget=self.token_budget,
            )
        else:
            state = HarnessState(self.domain.name, self.max_steps, self.domain.cost_budget)
        key = episode_key(rng)
        episode_id = f"{self.domain.env_id}/{task.task_id}/seed={seed}"
        if tag is not None:
            episode_id += f"/{tag}"
        self._ep = Episode(
            task=task, state=state, rng=rng, executor=self.executor, episode_id=episode_id, key=key
        )
        self._final = None
        self._mask = self._legal(self._ep)
        return state.vector(), {"action_mask": self._mask.copy(), "task_id": task.task_id}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        ep = self._ep
        if ep is None:
            raise RuntimeError("call reset() before step()")
        if self._final is not None:
            raise RuntimeError("the episode has ended; call reset()")
        if type(action) is not int and (
            isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer)
        ):
            raise TypeError(f"action must be an int in Discrete({N_ACTIONS}), got {type(action).__name__}")
        a = int(action)
        if not 0 <= a < N_ACTIONS:
            raise ValueError(f"action {action!r} is not in Discrete({N_ACTIONS})")
        state = ep.state
        legal = bool(self._mask[a])
        if legal:
            outcome = self._apply(ep, a)
            state.cost += self._step_costs[a]
        else:
            if self.strict:
                allowed = [_NAMES[i] for i in np.flatnonzero(self._mask)]
                raise InvalidActionError(f"{_NAMES[a]} is not legal now; legal actions: {allowed}")
            outcome = Outcome(text="not legal in this state", valid=False)
            state.errors += 1
        state.t += 1
        state.last_action = a
        record: dict[str, Any] = {
            "t": state.t,
            "action": _NAMES[a],
            "valid": outcome.valid,
            "cost": self._step_costs[a] if legal else 0.0,
            "draft_version": ep.draft_version,
            "draft_hash": ep.draft_hash,
            "failure": outcome.failure,
            "text": outcome.text,
        }
        if outcome.check is not None:
            record["check"] = dict(outcome.check)
        if outcome.tests is not None:
            record["tests"] = dict(outcome.tests)
        if outcome.tool is not None:
            record["tool"] = dict(outcome.tool)
        if outcome.evidence:
            record["evidence"] = list(outcome.evidence)
        if outcome.issues:
            record["issues"] = list(outcome.issues)
        if ep.pending_io is not None:  # a chat executor's audit record of this step's call
            record["executor_io"], ep.pending_io = ep.pending_io, None
        spent = ep.pending_usage
        if spent is not None:  # this step's executor calls
            record["usage"], ep.pending_usage = spent, None
        ep.steps.append(record)

        terminated = a == _SUBMIT
        truncated = not terminated and state.t >= self.max_steps
        reward = 0.0
        info: dict[str, Any] = {}
        tokens = int(spent["prompt_tokens"] + spent["completion_tokens"]) if spent else 0
        if terminated or truncated:
            self._final = self._finish(ep, submitted=terminated)
            reward = self._final["G"]
            info.update(self._final)
        else:
            self._mask = self._legal(ep)
        if self.token_price:  # price 0 leaves the reward (and the info) exactly as without one
            reward -= self.token_price * tokens / 1000
            if self._final is not None:
                usage = ep.usage
                info["token_cost"] = (
                    self.token_price * (usage["prompt_tokens"] + usage["completion_tokens"]) / 1000
                )
        info["action_mask"] = self._mask.copy()
        info["invalid_action"] = not legal
        info["tokens"] = tokens
        info["latency_s"] = float(spent["latency_s"]) if spent else 0.0
        if self._v2:
            state.tokens = int(ep.usage["prompt_tokens"] + ep.usage["completion_tokens"])
        return state.vector(), reward, terminated, truncated, info

    def task_text(self, task: Task, observed: bool) -> str:
        """The task as the executor's prompt shows it (``Prompts.task_text``; the prompt without one)."""
        if self._prompts is None:
            return task.prompt
        return self._prompts.task_text(task, observed)

    def task_row(self, task: Task, observed: bool) -> tuple[float, ...]:
        """``prompt_length`` and the task slots of layout v2, read off ``task_text`` alone (built once)."""
        key = (task.task_id, observed)
        row = self._task_rows.get(key)
        if row is None:
            text = self.task_text(task, observed)
            length = min(len(text), PROMPT_CHARS_SCALE) / PROMPT_CHARS_SCALE
            row = self._task_rows[key] = (length, *self._features.task_vector(text))
        return row

    def _legal(self, ep: Episode) -> np.ndarray:
        """The domain's mask; under a ``token_budget``, without the calls that would exceed it (only
        SUBMIT once no call fits)."""
        mask = self.domain.action_mask(ep)  # shared and read-only: copied before a change
        if self.token_budget is None:
            return mask
        mask = mask.copy()
        left = self.token_budget - ep.usage["prompt_tokens"] - ep.usage["completion_tokens"]
        fits = False
        for action, kind in self.domain.calls.items():
            if mask[action]:
                if self.next_call_tokens(ep, kind) > left:
                    mask[action] = 0
                else:
                    fits = True
        if not fits:
            mask[:] = 0
            mask[Action.SUBMIT] = 1
        return mask

    def next_call_tokens(self, ep: Episode, kind: RequestKind) -> int:
        """An upper bound on the tokens of the next ``kind`` call: the prompt as the cached sizes give it,
        the longest reply the task's pool holds (a judge: its fixed reply size)."""
        costs = self.executor_profile.costs
        request = ExecutorRequest(kind, ep.task, ep.context, ep.draft, ep.feedback)
        prompt = prompt_tokens(costs, self._sizer.prompt_chars(request))
        if kind == "tool":
            pool = self.domain.tool_pool(ep.task, ep.context)
            longest = max(len(text) for text in (pool.reference, *(f.source for f in pool.flawed)))
        else:
            longest = self._longest.get(ep.task.task_id, -1)
            if longest < 0:
                pool = self.domain.pool(ep.task)
                longest = max(len(text) for text in (pool.reference, *(f.source for f in pool.flawed)))
                self._longest[ep.task.task_id] = longest
        return prompt + completion_tokens(costs, kind, longest)

    def action_masks(self) -> np.ndarray:
        """Legal actions as booleans (the sb3-contrib ``MaskablePPO`` convention)."""
        return self._mask.astype(bool)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            if self._ep is None:
                return draw_steps(self.domain.env_id, [], None, self.max_steps)
            title = f"{self.domain.env_id} {self._ep.task.task_id}"
            return draw_steps(title, self._ep.steps, self._final, self.max_steps)
        if self._ep is None:
            return "(no episode yet: call reset())\n"
        task = self._ep.task
        head = f"[{self.domain.env_id}] {task.task_id} ({task.difficulty}): {task.prompt.splitlines()[0]}"
        return render_steps(head, self._ep.steps, self._final)

    # -- the operations ------------------------------------------------------------------------
    def _apply(self, ep: Episode, a: int) -> Outcome:
        state = ep.state
        if a in (_DRAFT, _REVISE):
            outcome = self._execute(ep, "draft" if a == _DRAFT else "revise")
            if a == _REVISE:
                state.revisions += 1
            return outcome
        if a == _SUBMIT:
            return Outcome(text=f"submitted draft v{ep.draft_version}" if ep.draft else "submitted no draft")
        if a == _OBSERVE:
            outcome = self.domain.observe(ep)
            state.observed = ep.context.observed = True
            if self._v2:
                state.task = self.task_row(ep.task, observed=True)
        elif a == _RETRIEVE:
            outcome = self.domain.retrieve(ep)
            ep.context.evidence.extend(outcome.evidence)
            state.evidence += len(outcome.evidence)
        elif a == _CALL_TOOL:
            outcome = self.domain.call_tool(ep)
            state.tool_calls += 1
        else:
            outcome = self.domain.check(ep)
        if outcome.tool is not None:
            ep.context.tool_results.append(outcome.text)
            state.last_tool_ok = float(bool(outcome.tool["ok"]))
            state.errors += not outcome.tool["valid"]
        if outcome.check is not None:
            state.checked_draft = True
            state.check_coverage = float(outcome.check["coverage"])
            state.check_missing = float(outcome.check["missing"])
        if self._v2 and (outcome.check is not None or outcome.tests is not None):
            state.check_failed = self._features.failed_groups(outcome.issues)
        if outcome.tests is not None:
            state.tested_draft = True
            total = outcome.tests["total"]
            state.test_pass_rate = outcome.tests["passed"] / total if total else 0.0
            state.test_failures = total - outcome.tests["passed"]
        if outcome.failure:
            state.unresolved_failure = True
        if outcome.feedback is not None:
            ep.feedback = outcome.feedback
        return outcome

    def _execute(self, ep: Episode, kind: RequestKind) -> Outcome:
        response = ep.ask(kind)
        state = ep.state
        state.unresolved_failure = False
        if kind == "revise":
            # Feedback counts once (a REVISE consumes it), and every revision is a new version to check:
            # whether the text changed, and into what, never shows in the observation.
            ep.feedback = None
            state.checked_draft = state.tested_draft = False
        error = response.error
        if error is None and len(response.text) > MAX_ARTIFACT_CHARS:
            size = len(response.text)
            error = f"the draft has {size:,} characters, over the bound of {MAX_ARTIFACT_CHARS:,}"
        if error is not None:
            state.errors += 1
            state.unresolved_failure = True
            return Outcome(text=f"executor error: {error}", failure=True, issues=(error,))
        new_hash = artifact_hash(response.text)
        if new_hash == ep.draft_hash:
            return Outcome(text=f"{kind}: the executor returned draft v{ep.draft_version} unchanged")
        ep.draft, ep.draft_hash = response.text, new_hash
        ep.draft_version += 1
        state.has_draft = True
        state.checked_draft = state.tested_draft = False
        lines = response.text.count("\n") + 1
        return Outcome(text=f"{kind}: draft v{ep.draft_version} ({lines} lines)")

    def _finish(self, ep: Episode, submitted: bool) -> dict[str, Any]:
        verdict = self.domain.verdict(ep, ep.draft)
        G = g_norm(verdict.rubric)
        outcome = EpisodeOutcome(
            steps=ep.steps,
            submitted=submitted,
            max_steps=self.max_steps,
            G=G,
            rubric=verdict.rubric,
            signals=verdict.signals,
            events=self.domain.events,
            evidence_required=self.domain.evidence_required,
        )
        events = detect(outcome, self.hms_params)
        task = ep.task
        return {
            "G": G,
            "rubric": dict(verdict.rubric),
            "hms": events,
            "hms_norm": hms_norm(events, self.hms_params),
            "termination_reason": "submit" if submitted else "budget",
            "cost": ep.state.cost,
            "usage": dict(ep.usage),
            "task_id": task.task_id,
            "difficulty": task.difficulty,
            "sandbox": self.sandbox,
            "trajectory": {
                "env_id": self.domain.env_id,
                "task_id": task.task_id,
                "difficulty": task.difficulty,
                "max_steps": self.max_steps,
                "executor": self.executor.name,
                "episode_id": ep.episode_id,
                "signals": dict(verdict.signals),
                "steps": ep.steps,
            },
        }


def _indent(table: str) -> str:
    return "\n".join("    " + line for line in table.splitlines())


def _common_doc(domain_cls: type[Domain] | None) -> str:
    """The sections every environment page shares, with the domain's task-feature table (None: none)."""
    tasks = ""
    features = domain_cls.features if domain_cls is not None else None
    if features is not None:
        domain = features.domain
        names = features.names
        rows = ["| feature | name | meaning |", "|---|---|---|"]
        rows += [f"| `task_{i}` | {name} | {doc} |" for i, (name, doc) in enumerate(names)]
        groups = features.components
        listed = "; ".join(
            f"{group}: " + ", ".join(f"``{c}``" for c in sorted(groups) if groups[c] == group)
            for group in CHECK_GROUPS
            if group in groups.values()
        )
        tasks = (
            f"\n    Task features here (``harness_gym.domains.{domain}.features``; slots past "
            f"`task_{len(names) - 1}` are 0):\n\n"
            + _indent("\n".join(rows))
            + f"\n\n    Check components here, by the group they report on: {listed}; judge: ``judge``"
            + " where a CHECK asks the LLM judge.\n"
        )
    return _COMMON_DOC.format(
        features=_indent(feature_table()),
        features_v2=_indent(feature_table("v2", start=N_FEATURES)),
        task_features=tasks,
    )


HarnessEnv.__doc__ = (HarnessEnv.__doc__ or "") + _common_doc(None)
