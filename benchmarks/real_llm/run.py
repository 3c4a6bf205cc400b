"""All eight settings on a real chat model behind an OpenAI-compatible endpoint: a few eval episodes per
(setting, policy), recorded into a response cache, and a table of what the model did.

Columns: mean G; executor calls; parse failures and truncated replies per call; tokens per call; mean
latency per endpoint call (wall time of the episodes over the calls that reached the endpoint, so a
replayed run shows none). An episode stopped by an endpoint error (e.g. a prompt over the model's
context) is counted under ``stopped`` and left out of G.

``--expected FILE`` also writes each finished episode's outcome (task, actions, raw replies, G) as JSON:
with the cache it is the fixture ``tests/test_real_model_replay.py`` replays offline. Every (setting,
policy) row whose episodes all finished is also kept in the cache as the ``harness-gym run`` command that
plays them (``record_runs``), so ``harness-gym replay CACHE`` reruns and checks the lot.

    python benchmarks/real_llm/run.py --base-url http://127.0.0.1:8011/v1 --model smollm2 \\
        --cache runs/smollm2.sqlite --episodes 3 --out benchmarks/real_llm/results.md
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import harness_gym
from harness_gym.evaluation.rollout import run_episode
from harness_gym.executors.cache import CacheError
from harness_gym.executors.openai_client import LLMError
from harness_gym.executors.openai_executor import OpenAIConfig
from harness_gym.policies.scripted import SCRIPTED, make_policy

POLICIES = ("base", "forced-check", "random", "check-revise", "expert")
"""Reference policies tried, in order; those ``harness_gym.policies.scripted`` does not define are skipped."""


def episode_record(env_id: str, policy: str, seed: int, info: dict[str, Any]) -> dict[str, Any]:
    steps = info["trajectory"]["steps"]
    return {
        "env_id": env_id,
        "policy": policy,
        "seed": seed,
        "task_id": info["task_id"],
        "actions": [s["action"] for s in steps],
        "replies": [s["executor_io"]["reply"] for s in steps if "executor_io" in s],
        "G": info["G"],
    }


def run_setting(env_id: str, policy_name: str, config: OpenAIConfig, episodes: int) -> dict[str, Any]:
    env = gym.make(env_id, split="eval", executor=config)
    policy = make_policy(policy_name, env_id)
    records, stopped, errors = [], 0, []
    start = time.perf_counter()
    for seed in range(episodes):
        try:
            info = run_episode(env, policy, seed=seed)
        except (LLMError, CacheError) as exc:
            stopped += 1
            errors.append(str(exc).splitlines()[0][:200])
            continue
        records.append((seed, info))
    seconds = time.perf_counter() - start
    stats = env.unwrapped.executor.stats()
    env.close()
    keys = records[0][1]["usage"] if records else ()
    usage = {k: sum(info["usage"][k] for _, info in records) for k in keys}
    calls = max(1, stats["requests"])
    return {
        "env_id": env_id,
        "policy": policy_name,
        "episodes": len(records),
        "stopped": stopped,
        "errors": errors,
        "G": sum(info["G"] for _, info in records) / len(records) if records else float("nan"),
        "calls": stats["requests"],
        "endpoint_calls": stats["api_calls"],
        "parse_failures_per_call": stats["parse_failures"] / calls,
        "truncation_rate": stats["truncations"] / calls,
        "prompt_tokens_per_call": usage.get("prompt_tokens", 0) / calls,
        "completion_tokens_per_call": usage.get("completion_tokens", 0) / calls,
        "latency_s": seconds / stats["api_calls"] if stats["api_calls"] else None,
        "episodes_out": [episode_record(env_id, policy_name, seed, info) for seed, info in records],
    }


def record_runs(cache: str, config: OpenAIConfig, episodes: list[dict[str, Any]]) -> int:
    """Keep each (setting, policy)'s episodes in the cache's ``runs`` table as the ``harness-gym run``
    command that replays them (seeds 0.. on the eval split, as ``run_setting`` plays them); how many."""
    from harness_gym.executors.cache import ResponseCache

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for episode in episodes:
        groups.setdefault((episode["env_id"], episode["policy"]), []).append(episode)
    with ResponseCache(cache, "read_write") as opened:
        opened.record_settings(config.recorded())
        for (env_id, policy), group in groups.items():
            seeds = [e["seed"] for e in group]
            if seeds != list(range(len(seeds))):
                continue  # an episode stopped: the command would not replay this row as recorded
            argv = ["run", "--env", env_id, "--policy", policy, "--episodes", str(len(group)), "--seed", "0"]
            outcome = {
                "command": "run",
                "env_id": env_id,
                "episodes": [{k: e[k] for k in ("task_id", "seed", "G", "actions")} for e in group],
                "executor": config.recorded(),
            }
            opened.add_run([*argv, "--split", "eval"], outcome)
    return len(groups)


def table(rows: list[dict[str, Any]], model: str) -> str:
    lines = [
        f"Model: `{model}`; {rows[0]['episodes'] + rows[0]['stopped']} eval episodes per row (seeds 0..).",
        "",
        "| setting | policy | episodes | stopped | G | calls | parse failures / call | truncated / call "
        "| prompt tok / call | completion tok / call | latency / endpoint call (s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        latency = f"{r['latency_s']:.2f}" if r["latency_s"] is not None else "replayed"
        lines.append(
            f"| {r['env_id']} | {r['policy']} | {r['episodes']} | {r['stopped']} | {r['G']:.3f} "
            f"| {r['calls']} "
            f"| {r['parse_failures_per_call']:.2f} | {r['truncation_rate']:.2f} "
            f"| {r['prompt_tokens_per_call']:.0f} | {r['completion_tokens_per_call']:.0f} | {latency} |"
        )
    return "\n".join(lines) + "\n"


def summary(rows: list[dict[str, Any]]) -> str:
    """Per setting over all its policies (the README's table): Base and expert G, calls, and parse
    failures and truncated replies per call (weighted by each row's calls)."""
    lines = [
        "| setting | Base G | expert G | calls (all policies) | parse failures / call | truncated / call |",
        "|---|---|---|---|---|---|",
    ]
    for env_id in dict.fromkeys(r["env_id"] for r in rows):
        mine = [r for r in rows if r["env_id"] == env_id]
        g = {policy: f"{G:.3f}" for policy, G in ((r["policy"], r["G"]) for r in mine)}
        calls = sum(r["calls"] for r in mine)
        per_call = {
            key: sum(r[key] * r["calls"] for r in mine) / max(1, calls)
            for key in ("parse_failures_per_call", "truncation_rate")
        }
        lines.append(
            f"| `{env_id}` | {g.get('base', '-')} | {g.get('expert', '-')} | {calls} "
            f"| {per_call['parse_failures_per_call']:.2f} | {per_call['truncation_rate']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--cache", required=True, help="response-cache SQLite file (recorded into)")
    parser.add_argument("--cache-mode", default="read_write", choices=("read_write", "read_only"))
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument(
        "--context-tokens",
        type=int,
        default=None,
        help="the server's context window (OpenAIConfig.context_tokens)",
    )
    parser.add_argument("--envs", default="all", help="comma-separated env ids, or all")
    parser.add_argument("--out", type=Path, help="Markdown table")
    parser.add_argument("--json", type=Path, help="per-row results as JSON")
    parser.add_argument("--expected", type=Path, help="per-episode outcomes (the replay test's fixture)")
    args = parser.parse_args()
    env_ids = harness_gym.ENV_IDS if args.envs == "all" else tuple(args.envs.split(","))
    config = OpenAIConfig(
        model=args.model,
        base_url=args.base_url,
        cache=args.cache,
        cache_mode=args.cache_mode,
        max_tokens=args.max_tokens,
        context_tokens=args.context_tokens,
        max_retries=2,
        timeout_s=1800,  # a 512-token reply on a busy CPU
    )
    policies = [p for p in POLICIES if p in SCRIPTED]
    rows = []
    for env_id in env_ids:
        for policy in policies:
            row = run_setting(env_id, policy, config, args.episodes)
            rows.append(row)
            print(table([row], args.model).splitlines()[-1], flush=True)
    text = table(rows, args.model) + "\nPer setting, all policies together:\n\n" + summary(rows)
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        slim = [{k: v for k, v in r.items() if k != "episodes_out"} for r in rows]
        args.json.write_text(json.dumps(slim, indent=1) + "\n")
    if args.expected:
        episodes = [e for r in rows for e in r["episodes_out"]]
        fixture = {
            "model": args.model,
            "base_url": args.base_url,
            "max_tokens": args.max_tokens,
            "context_tokens": args.context_tokens,
        }
        args.expected.write_text(json.dumps({**fixture, "episodes": episodes}, indent=1) + "\n")
    if args.cache_mode == "read_write":
        record_runs(args.cache, config, [e for r in rows for e in r["episodes_out"]])


if __name__ == "__main__":
    main()
