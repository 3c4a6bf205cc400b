"""Reading a results dict: settings in the paper's order, a setting's policies, Base, labels.

Any setting, policy or buffer may be missing; the readers then return None or empty."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.evaluation.paper import PAPER, SETTING_ORDER

AW, BC, FC = "awr", "bc", "forced-check"
SCRIPTED = frozenset({"base", AW, BC, FC, "exploratory", "random"})
"""Policies with a column of their own; every other policy counts as another offline RL algorithm."""


def _ordered_settings(results: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Settings in the paper's order, unknown ids after them alphabetically."""
    settings = results.get("settings") or {}
    rank = {env_id: i for i, env_id in enumerate(SETTING_ORDER)}
    ids = sorted(settings, key=lambda e: (rank.get(e, len(rank)), e))
    return [(env_id, settings[env_id] or {}) for env_id in ids]


def _policies(setting: Mapping[str, Any]) -> Mapping[str, Any]:
    return (setting.get("compare") or {}).get("policies") or {}


def _policy(setting: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return _policies(setting).get(name)


def _base(setting: Mapping[str, Any]) -> Mapping[str, Any] | None:
    compare = setting.get("compare") or {}
    return _policy(setting, compare.get("base", "base"))


def _base_G(setting: Mapping[str, Any]) -> float | None:
    base = _base(setting)
    if base is not None:
        return base.get("G")
    for entry in _policies(setting).values():  # every entry carries the paired Base mean
        if entry.get("base_G") is not None:
            return entry["base_G"]
    return None


def _get(entry: Mapping[str, Any] | None, key: str) -> Any:
    return None if entry is None else entry.get(key)


def _lift_difference(setting: Mapping[str, Any], label: str, other: str) -> float | None:
    """ΔΔ from ``compare``'s lifts, else from the two lifts when both policies are present."""
    lift = ((setting.get("compare") or {}).get("lifts") or {}).get(label)
    if lift is not None and lift.get("estimate") is not None:
        return lift["estimate"]
    aw, oth = _get(_policy(setting, AW), "delta_G"), _get(_policy(setting, other), "delta_G")
    return None if aw is None or oth is None else aw - oth


def _is_adapter(env_id: str) -> bool:
    from harness_gym.envs.registry import ADAPTERS

    return env_id in ADAPTERS


def _label(env_id: str) -> str:
    return PAPER[env_id].label if env_id in PAPER else env_id


def _short(env_id: str) -> str:
    return PAPER[env_id].short if env_id in PAPER else env_id


def _other_algorithms(setting: Mapping[str, Any]) -> list[str]:
    base = (setting.get("compare") or {}).get("base", "base")
    return [name for name in _policies(setting) if name not in SCRIPTED and name != base]
