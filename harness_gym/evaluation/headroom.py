"""The headroom table: how far above Base the reference policies get on each environment.

``measure`` rolls every reference policy (``harness_gym.policies.scripted.REFERENCE_POLICIES``, plus any
optional reference found installed, see ``OPTIONAL_POLICIES``) through the eval protocol (every eval task
x seeds x rollouts, the episodes ``run_protocol`` runs, so pairs share seeds across policies) and keeps
each episode's G. ``summarize_setting`` and ``headroom_markdown`` turn that into the tables
``harness-gym headroom`` (``harness_gym.cli.headroom``) prints: mean G per policy beside the paper's Base
and AW, and ceiling information — best-of-k (per task and seed, the best of its rollouts; per task, the
best of all its episodes) and the share of eval tasks that some observation-only policy, or
hindsight-submit (which reads hidden state), solves in at least one episode.

The ``online`` reference (``harness_gym.evaluation.online``) is not played here: its episodes are read
from the online-reference file, where the trained models played the same protocol episodes. The
state-dependence gap (``state_dependence_gap``) is the best state-reading reference (expert or online,
whichever has the higher mean G on these episodes) minus open-loop, with a paired bootstrap interval
that resamples whole tasks (``paired_gap`` with ``clusters``): episodes of one task share it, so they
are not independent draws. Choosing the better reference on the same episodes makes the gap a little
optimistic where the two are close.

``reference_table`` / ``write_reference_scores`` produce ``harness_gym/data/reference_scores.json`` (the
table ``harness_gym.evaluation.reference_scores`` reads) from the random and expert policies' measurements:
the reference scores are always produced by this code, never typed in.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.rubric import SOLVED_G
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS, PAPER
from harness_gym.evaluation.rollout import protocol_episodes, run_episode

OPTIONAL_POLICIES: dict[str, tuple[str, str]] = {"profile": ("harness_gym.policies.profile", "ProfilePolicy")}
OPEN_LOOP = "open-loop"
"""The best fixed action string (``harness_gym.policies.open_loop``), measured where a string is shipped."""
GAP_RESAMPLES = 10_000
"""Reference policies reported when their module is installed: name -> (module, class). The class is
built as ``cls(env_id)`` (with ``executor_profile=`` when the environment was given one)."""


HIDDEN_STATE_POLICIES = frozenset({"hindsight-submit", "oracle"})
"""References that read hidden state (not counted as observation-only)."""


@dataclass(frozen=True)
class Protocol:
    """Which episodes every policy runs: the eval protocol, or a reduced one for quick checks."""

    split: str = "eval"
    seeds: tuple[int, ...] = EVAL_SEEDS
    rollouts: int = EVAL_ROLLOUTS
    max_tasks: int | None = None
    """Only the first ``max_tasks`` tasks of the split (None: all)."""

    @property
    def is_full(self) -> bool:
        return (
            self.split == "eval"
            and self.seeds == EVAL_SEEDS
            and self.rollouts == EVAL_ROLLOUTS
            and self.max_tasks is None
        )

    def describe(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "seeds": list(self.seeds),
            "rollouts": self.rollouts,
            "tasks": self.max_tasks,
        }


STATE_READING = ("expert", "online")
"""References that read the (observable) state; the gap takes the better of those measured."""


def policy_names(include_optional: bool = True) -> tuple[str, ...]:
    """The reference policies measured here: the scripted ones, open-loop, then every optional one
    installed (``online`` joins when named, or by default where the online-reference file has it)."""
    from harness_gym.policies.scripted import REFERENCE_POLICIES

    optional = tuple(
        name
        for name, (module, _) in OPTIONAL_POLICIES.items()
        if include_optional and importlib.util.find_spec(module) is not None
    )
    return (*REFERENCE_POLICIES, OPEN_LOOP, *optional)


def build_policy(name: str, env_id: str, env: Any, env_kwargs: Mapping[str, Any]) -> Any:
    """The policy ``name`` ready to act in ``env`` (hindsight-submit bound to it)."""
    from harness_gym.policies.scripted import SCRIPTED, bind_policy, make_policy

    if name in SCRIPTED:
        return bind_policy(make_policy(name, env_id), env)
    if name == OPEN_LOOP:
        from harness_gym.policies.open_loop import OpenLoopPolicy

        return OpenLoopPolicy(
            env_id,
            obs_layout=env_kwargs.get("obs_layout", "v1"),
            token_price=env_kwargs.get("token_price", 0.0),
        )
    if name not in OPTIONAL_POLICIES:
        known = ", ".join((*SCRIPTED, OPEN_LOOP, *OPTIONAL_POLICIES))
        raise ValueError(f"unknown reference policy {name!r}; known: {known}")
    module, attr = OPTIONAL_POLICIES[name]
    cls = getattr(importlib.import_module(module), attr)
    profile = env_kwargs.get("executor_profile")
    return cls(env_id) if profile is None else cls(env_id, executor_profile=profile)


def measure(
    env_id: str,
    policies: Sequence[str] | None = None,
    protocol: Protocol = Protocol(),
    log: Callable[[str], None] | None = None,
    online_file: str | Path | None = None,
    **env_kwargs: Any,
) -> dict[str, list[dict[str, Any]]]:
    """Per policy, one record ``{task_id, seed, rollout, G}`` per protocol episode (protocol order);
    ``online``'s read from ``online_file`` (default: the layout's file,
    ``harness_gym.evaluation.online.ONLINE_FILES``)."""
    import gymnasium as gym

    from harness_gym.evaluation.online import ONLINE, online_records, read_online

    names = tuple(policies) if policies is not None else policy_names()
    layout = env_kwargs.get("obs_layout", "v1")
    price = env_kwargs.get("token_price", 0.0)
    if policies is None and env_id not in _shipped_open_loop(layout, price):  # a default run: where shipped
        names = tuple(name for name in names if name != OPEN_LOOP)
    if policies is None and env_id in read_online(online_file, layout)["settings"]:
        names = (*names, ONLINE)
    env = gym.make(env_id, split=protocol.split, **env_kwargs)
    try:
        task_ids = [task.task_id for task in env.unwrapped.tasks][: protocol.max_tasks]
        episodes = protocol_episodes(task_ids, protocol.seeds, protocol.rollouts)
        results: dict[str, list[dict[str, Any]]] = {}
        for name in names:
            if name == ONLINE:
                profile = env_kwargs.get("executor_profile")
                results[name] = online_records(
                    env_id, episodes, online_file, layout, "default" if profile is None else str(profile)
                )
                continue
            policy = build_policy(name, env_id, env, env_kwargs)
            results[name] = [
                {
                    "task_id": task_id,
                    "seed": int(seed),
                    "rollout": int(rollout),
                    "G": float(run_episode(env, policy, seed=episode_seed, task_id=task_id)["G"]),
                }
                for seed, task_id, rollout, episode_seed in episodes
            ]
            if log is not None:
                log(f"{env_id} {name}: mean G {np.mean([r['G'] for r in results[name]]):.3f}")
        return results
    finally:
        env.close()


def _shipped_open_loop(layout: str = "v1", token_price: float = 0.0) -> set[str]:
    from harness_gym.policies.open_loop import open_loop_table

    return set(open_loop_table(layout, token_price)["strings"])


def paired_gap(
    a: Sequence[float], b: Sequence[float], seed: int = 0, clusters: Sequence[Any] | None = None
) -> tuple[float, float, float]:
    """mean(a - b) over episode pairs and its 95% percentile bootstrap interval (``GAP_RESAMPLES``),
    resampling pairs, or whole clusters of pairs (e.g. each pair's task) when ``clusters`` labels them."""
    from harness_gym.evaluation.protocol import _clustered

    d = np.asarray(a, float) - np.asarray(b, float)
    rng = np.random.default_rng(seed)
    sums, counts = _clustered(d, clusters)
    picks = rng.integers(0, sums.size, size=(GAP_RESAMPLES, sums.size))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(d.mean()), float(lo), float(hi)


def _best_of(
    records: Sequence[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Any]
) -> dict[Any, float]:
    best: dict[Any, float] = {}
    for r in records:
        k = key(r)
        best[k] = max(best.get(k, 0.0), float(r["G"]))
    return best


def summarize_setting(results: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Mean G per policy and the ceiling information of one setting."""
    if not results:
        raise ValueError("no policy results to summarise")
    mean_g = {name: float(np.mean([r["G"] for r in recs])) for name, recs in results.items()}
    best_of_rollouts = {
        name: float(np.mean(list(_best_of(recs, lambda r: (r["task_id"], r["seed"])).values())))
        for name, recs in results.items()
    }
    per_task = {name: _best_of(recs, lambda r: r["task_id"]) for name, recs in results.items()}
    tasks = sorted(next(iter(per_task.values())))
    honest = [name for name in results if name not in HIDDEN_STATE_POLICIES]
    best_honest = {t: max(per_task[name][t] for name in honest) for t in tasks} if honest else {}
    best_any = {t: max(per_task[name][t] for name in results) for t in tasks}
    return {
        "tasks": len(tasks),
        "episodes_per_policy": len(next(iter(results.values()))),
        "mean_G": mean_g,
        "best_of_rollouts": best_of_rollouts,
        "best_per_task": {name: float(np.mean(list(per_task[name].values()))) for name in results},
        "ceiling_G": float(np.mean(list(best_any.values()))),
        "solved_by_observation_only": (
            float(np.mean([best_honest[t] >= SOLVED_G for t in tasks])) if honest else None
        ),
        "solved_by_any": float(np.mean([best_any[t] >= SOLVED_G for t in tasks])),
        **state_dependence_gap(results),
    }


def state_dependence_gap(results: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """``state_dependence_gap``: (gap, low, high) of the best state-reading reference measured
    (``STATE_READING``, by mean G) minus open-loop, its interval resampling whole tasks;
    ``state_dependence_reference``: which one. Both None without open-loop or a state-reading reference."""
    readers = [name for name in STATE_READING if name in results]
    if OPEN_LOOP not in results or not readers:
        return {"state_dependence_gap": None, "state_dependence_reference": None}
    best = max(readers, key=lambda name: float(np.mean([r["G"] for r in results[name]])))
    pairs = list(zip(results[best], results[OPEN_LOOP], strict=True))
    if any(
        (x["task_id"], x["seed"], x["rollout"]) != (y["task_id"], y["seed"], y["rollout"]) for x, y in pairs
    ):
        raise ValueError(f"{best} and {OPEN_LOOP} did not play the same episodes")
    gap = paired_gap(
        [x["G"] for x, _ in pairs], [y["G"] for _, y in pairs], clusters=[x["task_id"] for x, _ in pairs]
    )
    return {"state_dependence_gap": gap, "state_dependence_reference": best}


def headroom_markdown(summaries: Mapping[str, Mapping[str, Any]]) -> str:
    """The headroom table (mean G per policy, paper's Base and AW) and the ceiling table, in Markdown."""
    names = list(next(iter(summaries.values()))["mean_G"])
    head = ["setting", *names, "paper Base", "paper AW"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for env_id, s in summaries.items():
        paper = PAPER.get(env_id)
        cells = [f"{s['mean_G'][n]:.3f}" for n in names]
        cells += [f"{paper.base_G:.3f}", f"{paper.aw_G:.3f}"] if paper else ["", ""]
        lines.append(f"| {env_id} | " + " | ".join(cells) + " |")
    shown = [n for n in ("base", "expert") if n in names] or names[-1:]
    best_cols = [f"{n} best of rollouts | {n} best per task" for n in shown]
    lines += [
        "",
        f"| setting | tasks | {' | '.join(best_cols)} | ceiling (best per task, any policy) | "
        "tasks solved, observation-only | tasks solved, any incl. hindsight-submit |",
        "|" + "---|" * (5 + 2 * len(shown)),
    ]
    for env_id, s in summaries.items():
        honest = s["solved_by_observation_only"]
        best = [f"{s['best_of_rollouts'][n]:.3f} | {s['best_per_task'][n]:.3f}" for n in shown]
        lines.append(
            f"| {env_id} | {s['tasks']} | {' | '.join(best)} | {s['ceiling_G']:.3f} | "
            f"{'' if honest is None else f'{honest:.0%}'} | {s['solved_by_any']:.0%} |"
        )
    gaps = {
        env_id: (s.get("state_dependence_reference") or "expert", *s["state_dependence_gap"])
        for env_id, s in summaries.items()
        if s.get("state_dependence_gap")
    }
    if gaps:
        lines += [
            "",
            "| setting | best state-reading reference | state-dependence gap: it − open-loop "
            "[95% paired bootstrap over tasks] |",
            "|---|---|---|",
        ]
        lines += [
            f"| {env_id} | {ref} | {m:+.3f} [{lo:+.3f}, {hi:+.3f}] |"
            for env_id, (ref, m, lo, hi) in gaps.items()
        ]
    rates = {env_id: s["check_rates"] for env_id, s in summaries.items() if s.get("check_rates")}
    if rates:
        lines += ["", CHECK_RATES_HEADER, "|---|---|---|---|---|"]
        for env_id, r in rates.items():
            cells = [_rate(r[kind][rate]) for kind in ("structural", "with_judge") for rate in RATES]
            lines.append(f"| {env_id} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


RATES = ("false_alarm", "detection")


def _rate(value: float | None) -> str:
    return "n/a (no rubric-perfect draft)" if value is None else f"{value:.0%}"


CHECK_RATES_HEADER = (
    "| setting | CHECK false alarm, structural | detection, structural | false alarm, with the judge | "
    "detection, with the judge |"
)


CHECK_RATES_PROTOCOL = Protocol(seeds=(0,), rollouts=1)
"""Where CHECK's rates are measured: every eval task once (coding's checks run the tests)."""


def check_rates(env_id: str, protocol: Protocol = CHECK_RATES_PROTOCOL, **env_kwargs: Any) -> dict[str, Any]:
    """CHECK's false-alarm and detection rates in the expert's context.

    Per episode the expert's gathering is replayed (its actions up to its DRAFT), then the task's
    reference and every flawed variant of its pool are checked once each in that context. False alarm
    = P(the check fails | a rubric-perfect draft: it loses no criterion but cost in that context);
    detection = P(the check fails | any other draft), pool variants weighted as the executor draws
    wrong drafts (``flaw_weights``, uniform within a kind; the reference, when it is not rubric-perfect,
    with weight 1). A reference that cites a source the harness never opened is not rubric-perfect
    (``grounding``), so a check that says so is a detection.
    ``structural`` counts the setting's own check components only, ``with_judge`` any finding, the LLM
    judge's included.
    """
    import gymnasium as gym

    from harness_gym.core.actions import Action
    from harness_gym.envs.domain import artifact_hash
    from harness_gym.executors.base import JUDGE, Finding
    from harness_gym.policies.scripted import ExpertPolicy

    env = gym.make(env_id, split=protocol.split, **env_kwargs).unwrapped
    expert = ExpertPolicy(env_id)
    weights = env.executor_profile.draft.flaw_weights
    counts = {kind: np.zeros(4) for kind in ("structural", "with_judge")}  # fa, n_ref, det, n_flawed
    task_ids = [task.task_id for task in env.tasks][: protocol.max_tasks]
    for _, task_id, _, seed in protocol_episodes(task_ids, protocol.seeds, protocol.rollouts):
        obs, info = env.reset(seed=seed, options={"task_id": task_id})
        while True:
            action = expert.choose(obs, info["action_mask"])
            if action in (Action.DRAFT, Action.SUBMIT):
                break
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        ep = env._ep
        pool = env.domain.pool(ep.task)
        by_kind: dict[str, int] = {}
        for item in pool.flawed:
            by_kind[item.flaw] = by_kind.get(item.flaw, 0) + 1
        drafts = [(pool.reference, 1.0, False)] + [
            (item.source, weights.get(item.flaw, 1.0) / by_kind[item.flaw], True) for item in pool.flawed
        ]
        for text, weight, _ in drafts:
            ep.draft, ep.draft_hash = text, artifact_hash(text)
            ep.state.has_draft = True
            rubric = env.domain.verdict(ep, text).rubric
            flawed = any(score < top for name, (score, top) in rubric.items() if not name.startswith("cost"))
            issues = env.domain.check(ep).issues
            judged = any(isinstance(i, Finding) and i.component == JUDGE for i in issues)
            structural = any(not (isinstance(i, Finding) and i.component == JUDGE) for i in issues)
            for kind, failed in (("structural", structural), ("with_judge", structural or judged)):
                c = counts[kind]
                if flawed:
                    c[2] += weight * failed
                    c[3] += weight
                else:
                    c[0] += failed
                    c[1] += 1
    env.close()
    return {
        kind: {
            "false_alarm": float(c[0] / c[1]) if c[1] else None,
            "detection": float(c[2] / c[3]) if c[3] else None,
            "rubric_perfect_drafts": int(c[1]),
        }
        for kind, c in counts.items()
    }


# -- the reference-score table --------------------------------------------------------------------------
REFERENCE_POLICY_NAMES = ("random", "expert")
"""The two ends of every normalised score (random = 0, expert = 100)."""


def reference_table_from(
    results: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
    protocol: Protocol,
    obs_layout: str = "v1",
) -> dict[str, Any]:
    """The reference-score table (the JSON ``harness_gym.evaluation.reference_scores`` reads) from
    measurements: ``results[env_id][policy]`` as ``measure`` returns them, with at least random and expert.
    A layout other than v1 is recorded in the protocol (v1's table stays as published)."""
    scores = {
        env_id: {
            name: round(float(np.mean([r["G"] for r in by_policy[name]])), 4)
            for name in REFERENCE_POLICY_NAMES
        }
        for env_id, by_policy in results.items()
    }
    described = (
        protocol.describe() if obs_layout == "v1" else {**protocol.describe(), "obs_layout": obs_layout}
    )
    return {
        "protocol": described,
        "policies": {
            "random": "harness_gym.policies.scripted.RandomPolicy",
            "expert": "harness_gym.policies.scripted.ExpertPolicy",
        },
        "scores": scores,
    }


def reference_table(
    env_ids: Sequence[str], protocol: Protocol = Protocol(), log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Measure random and expert on ``protocol`` for every env id and build the table from that."""
    results = {env_id: measure(env_id, REFERENCE_POLICY_NAMES, protocol, log=log) for env_id in env_ids}
    return reference_table_from(results, protocol)


def write_reference_scores(
    table: Mapping[str, Any], path: str | Path | None = None, obs_layout: str = "v1"
) -> Path:
    """Write a reference table as JSON (sorted keys: a rerun on the same simulator is byte-identical);
    by default over the packaged table of ``obs_layout`` (``reference_scores.REFERENCE_FILES``)."""
    from harness_gym.evaluation import reference_scores

    packaged = reference_scores.reference_file(obs_layout)
    target = Path(path) if path is not None else packaged
    target.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    if target in reference_scores.REFERENCE_FILES.values():
        reference_scores.reference_table.cache_clear()
    return target
