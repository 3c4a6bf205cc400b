"""Do tasks differ in what they need? The string x task interaction of a setting, measured.

A fixed action string ignores the state. If one string is near-best on every task, a controller that reads
the state has nothing to gain; if the best string differs by task, and the difference can be told from
what the controller sees, it has. This script measures both on the train split:

1. Candidates: the ``--strings`` best strings of a beam search (``open_loop.beam_strings``, width 24,
   screened on train tasks x seed 0 x one rollout), plus a family of strings that differ in how much they
   gather: ``O`` + k x (RETRIEVE or CALL_TOOL) + one of ``D``, ``DCV``, ``DCVCV``, k = 0..5 (the beam's
   strings are near-copies of one compromise string, which hides a per-task choice of how much to gather).
2. Two independent episode sets, A (seeds 0-2) and B (seeds 3-5), each train tasks x 3 seeds x 3 rollouts.
   ``G[string, task]`` is a task's mean G under the string in each set.
3. Reported (the SDs over the 10 strings best on A, the gains over every candidate):
   - ``main_sd``: the SD of the strings' mean G (how much the choice of string matters);
   - ``interaction_sd``: the SD of the string x task interaction, sqrt(mean(rA * rB)) over the residuals
     r = G - string mean - task mean + grand mean of A and of B. Sampling noise is independent between A
     and B, so the product keeps only the interaction that repeats (0 when it does not);
   - ``per_task_gain``: each task plays the string best for it on A, scored on B, minus the one string
     best on A, scored on B; a 95% interval over tasks (``scipy.stats.bootstrap``). An oracle bound: it
     knows the task's identity;
   - ``per_view_gain``: the same, with tasks grouped by the task features of their step-0 observation in
     layout v2 (``task_0`` ... ``task_5``, read off the prompt; the continuous ``prompt_length`` is left
     out, or almost every task would be its own group and this would be ``per_task_gain`` again): one
     string per group. What a controller reading the task could gain before its first action.

At a ``--token-price`` (the priced track: reward G minus the price of the executor's tokens) the same
measurements are of the return instead of G.

    python benchmarks/task_need.py --env HarnessResearch-v0 [--obs-layout v2] [--token-price 0.05]
        [--strings 40] [--json out]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from scipy.stats import bootstrap

import harness_gym
from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURES_V2, TASK_SLOTS
from harness_gym.evaluation.open_loop import Scorer, beam_strings, play_string
from harness_gym.evaluation.rollout import protocol_episodes
from harness_gym.policies.open_loop import LETTERS

SEEDS_A, SEEDS_B, ROLLOUTS = (0, 1, 2), (3, 4, 5), 3
TOP = 10
"""Strings (best on A) the interaction and the gains are measured over."""
GATHER_COUNTS = range(6)
TAILS = ("D", "DCV", "DCVCV")
WIDTH = 24


def task_matrix(
    env: Any, strings: Sequence[str], task_ids: Sequence[str], seeds: Sequence[int]
) -> np.ndarray:
    """``G[string, task]``: each task's mean G under each string, over ``seeds`` x ``ROLLOUTS``."""
    episodes = protocol_episodes(task_ids, seeds, ROLLOUTS)
    column = {task_id: i for i, task_id in enumerate(task_ids)}
    out = np.zeros((len(strings), len(task_ids)))
    counts = np.zeros(len(task_ids))
    for _, task_id, _, _ in episodes:
        counts[column[task_id]] += 1
    for s, string in enumerate(strings):
        for g, (_, task_id, _, _) in zip(play_string(env, string, episodes), episodes, strict=True):
            out[s, column[task_id]] += g
    return out / counts


def residuals(g: np.ndarray) -> np.ndarray:
    return g - g.mean(axis=1, keepdims=True) - g.mean(axis=0, keepdims=True) + g.mean()


def selection_gain(ga: np.ndarray, gb: np.ndarray, groups: Sequence[Any]) -> dict[str, Any]:
    """B-score of one string per group (best on A for the group) minus the one string best on A."""
    best = int(np.argmax(ga.mean(axis=1)))
    members: dict[Any, list[int]] = defaultdict(list)
    for t, group in enumerate(groups):
        members[group].append(t)
    chosen = np.empty(ga.shape[1], dtype=int)
    for tasks in members.values():
        means = ga[:, tasks].mean(axis=1)
        # ties go to the global best, then to the earlier (better-screened) string
        chosen[tasks] = best if means[best] >= means.max() else int(np.argmax(means))
    diff = gb[chosen, np.arange(gb.shape[1])] - gb[best]
    if np.ptp(diff) == 0:
        low = high = float(diff.mean())
    else:
        ci = bootstrap((diff,), np.mean, n_resamples=10_000, random_state=0).confidence_interval
        low, high = float(ci.low), float(ci.high)
    return {"gain": float(diff.mean()), "ci95": [low, high], "groups": len(members)}


def views(env_id: str, task_ids: Sequence[str], **env_kwargs: Any) -> list[bytes]:
    """Each task's task features in its step-0 observation of layout v2 (what a controller reads off the
    task before acting)."""
    env = gym.make(env_id, split="train", **{**env_kwargs, "obs_layout": "v2"}).unwrapped
    slots = [FEATURES_V2.index(f"task_{i}") for i in range(TASK_SLOTS)]
    out = []
    for task_id in task_ids:
        obs, _ = env.reset(seed=0, options={"task_id": task_id})
        out.append(np.asarray(obs, dtype=np.float32)[slots].tobytes())
    return out


def gathering_strings(alphabet: Sequence[str], max_len: int) -> list[str]:
    """``O`` + k gathers + a tail, for each gathering action of the setting (module docstring, step 1)."""
    out = []
    for gather in (c for c in "RT" if c in alphabet):
        for k in GATHER_COUNTS:
            for tail in TAILS:
                string = ("O" if "O" in alphabet else "") + gather * k + tail
                if len(string) <= max_len and all(c in alphabet for c in string):
                    out.append(string)
    return out


def measure(env_id: str, n_strings: int, **env_kwargs: Any) -> dict[str, Any]:
    started = time.perf_counter()
    env = gym.make(env_id, split="train", **env_kwargs).unwrapped
    domain = env.domain
    alphabet = [LETTERS[a] for a in sorted(int(a) for a in domain.supported) if a != Action.SUBMIT]
    task_ids = [task.task_id for task in env.tasks]
    screen = Scorer(env, protocol_episodes(task_ids, (0,), 1))
    ranked = beam_strings(screen, alphabet, bool(domain.tool_needs_draft), int(env.max_steps), WIDTH)
    strings = [s for s, _ in ranked[:n_strings]]
    strings += [s for s in gathering_strings(alphabet, int(env.max_steps)) if s not in strings]
    ga = task_matrix(env, strings, task_ids, SEEDS_A)
    gb = task_matrix(env, strings, task_ids, SEEDS_B)
    order = np.argsort(-ga.mean(axis=1), kind="stable")
    ga, gb, strings = ga[order], gb[order], [strings[i] for i in order]
    top_a, top_b = ga[:TOP], gb[:TOP]
    cross = float(np.mean(residuals(top_a) * residuals(top_b)))
    step0 = views(env_id, task_ids, **env_kwargs)
    return {
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "train_tasks": len(task_ids),
        "strings": strings,
        "best_on_A": strings[0],
        "best_G_on_B": round(float(gb[0].mean()), 4),
        "main_sd": round(float(np.concatenate([top_a, top_b], axis=1).mean(axis=1).std(ddof=1)), 4),
        "interaction_sd": round(float(np.sqrt(max(cross, 0.0))), 4),
        "per_task_gain": selection_gain(ga, gb, task_ids),
        "per_view_gain": selection_gain(ga, gb, step0),
        "task_feature_views": len(set(step0)),
        "seconds": round(time.perf_counter() - started, 1),
    }


def line(r: dict[str, Any]) -> str:
    task, view, kwargs = r["per_task_gain"], r["per_view_gain"], r["env_kwargs"]
    return (
        f"| {r['env_id']} | {kwargs.get('obs_layout', 'v1')} {kwargs.get('token_price', 0)} "
        f"| `{r['best_on_A']}` {r['best_G_on_B']:.3f} "
        f"| {r['main_sd']:.3f} | {r['interaction_sd']:.3f} "
        f"| {task['gain']:+.3f} [{task['ci95'][0]:+.3f}, {task['ci95'][1]:+.3f}] "
        f"| {view['gain']:+.3f} [{view['ci95'][0]:+.3f}, {view['ci95'][1]:+.3f}] ({view['groups']}) "
        f"| {r['seconds']:.0f} |"
    )


HEADER = (
    "| setting | MDP layout, token price | best string on A, return on B | main SD | interaction SD "
    "| per-task gain [95%] | per-view gain [95%] (views) | s |\n|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--env", nargs="+", default=list(harness_gym.ENV_IDS), help="env ids (default: all eight)"
    )
    parser.add_argument(
        "--obs-layout", choices=("v1", "v2"), default=None, help="the MDP (default: the env's)"
    )
    parser.add_argument(
        "--strings", type=int, default=40, help="candidate strings from the beam (default 40)"
    )
    parser.add_argument(
        "--token-price", type=float, default=0.0, help="G per thousand executor tokens (default 0: the paper)"
    )
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()
    env_kwargs = {} if args.obs_layout is None else {"obs_layout": args.obs_layout}
    if args.token_price:
        env_kwargs["token_price"] = args.token_price
    print(HEADER)
    out = []
    for env_id in args.env:
        result = measure(env_id, args.strings, **env_kwargs)
        out.append(result)
        print(line(result), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
