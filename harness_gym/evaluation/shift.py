"""Executor shift: controllers trained against one executor profile, evaluated against others.

``harness-gym bench --train-profile A --eval-profile B [C ...]`` collects the buffer and trains with the
simulated executor under profile A (``BenchConfig.train_profile``, handed to every environment as its
``executor_profile``), evaluates on A as usual, and then evaluates the same trained controllers (and
Base) under every other profile. The transfer gap of a policy is its mean G under the
evaluation profile minus its mean G under the training profile; Base's own change is given beside it,
since a profile changes what every policy can reach. Only the mechanism differs between the shipped
profiles (the Base-fitted draft parameters are shared), so Base barely moves and the gaps isolate what
a controller learned about checking and revising.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness_gym.envs.registry import executor_profile


def check_profiles(train: str | None, evals: Sequence[str], llm: bool = False) -> None:
    """Fail early, naming the problem, on a profile that does not resolve or does not apply."""
    if llm and (train or evals):
        raise ValueError("executor profiles apply to the simulated executor, not to --executor openai")
    for spec in ([train] if train else []) + list(evals):
        executor_profile(spec)


def evaluate_shift(
    policies: Mapping[str, Sequence[tuple[int, Any]]],
    env_id: str,
    profiles: Sequence[str],
    rollouts: int,
    evaluate: Callable[..., list[Any]],
    **env_kwargs: Any,
) -> dict[str, dict[str, float]]:
    """Mean G of every policy under every profile: ``{profile: {policy: G}}``.

    ``policies`` maps a name to ``(evaluation seed, policy)`` pairs: a policy trained with seed s plays
    the episodes of seed s, as in the main protocol. ``env_kwargs`` are the main evaluation's; each
    profile replaces its ``executor_profile``.
    """
    out: dict[str, dict[str, float]] = {}
    for profile in profiles:
        row = {}
        for name, seeded in policies.items():
            results = []
            for seed, policy in seeded:
                results += evaluate(
                    policy,
                    env_id,
                    seeds=(seed,),
                    rollouts=rollouts,
                    policy_name=name,
                    **{**env_kwargs, "executor_profile": profile},
                )
            row[name] = sum(r.G for r in results) / len(results)
        out[profile] = row
    return out


def shift_rows(train: str, table: Mapping[str, Mapping[str, float]]) -> list[list[str]]:
    """Markdown rows: per evaluation profile and policy, G under it and the gap to the training profile."""
    rows = []
    trained = table.get(train, {})
    for profile, row in table.items():
        if profile == train:
            continue
        for name, g in row.items():
            gap = g - trained[name] if name in trained else float("nan")
            rows.append([profile, name, f"{trained.get(name, float('nan')):.3f}", f"{g:.3f}", f"{gap:+.3f}"])
    return rows


def shift_markdown(results: Mapping[str, Any]) -> str:
    """The transfer-gap section of the report ('' when the run had no evaluation profiles)."""
    blocks = []
    for env_id, setting in results.get("settings", {}).items():
        shift = setting.get("shift")
        if not shift:
            continue
        train = shift["train_profile"]
        header = "| eval profile | policy | G (train profile) | G (eval profile) | transfer gap |"
        lines = [f"**{env_id}** (trained against `{train}`)", "", header, "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in shift_rows(train, shift["G"])]
        blocks.append("\n".join(lines))
    if not blocks:
        return ""
    intro = (
        "## Executor shift\n\nControllers trained against one executor profile, evaluated against others "
        "(transfer gap = G under the evaluation profile - G under the training profile).\n\n"
    )
    return intro + "\n\n".join(blocks) + "\n"
