"""The ``online`` reference: an online learner's eval-protocol scores, stored beside ``open_loop.json``.

An online learner (``harness_gym.evaluation.online_training``: sb3-contrib's MaskablePPO on vectorised
environments) is trained per setting and seed on the train split until its learning curve on the
validation split is flat (``is_flat``), then the model of seed ``s`` plays evaluation seed ``s`` of the
eval protocol, as the bench's learners do. ``harness-gym headroom --train-online`` runs it and writes the
file this module reads and writes (``ONLINE_FILES`` by layout by default, one entry per env id, each with its
provenance: env steps, CPU-seconds, seeds, library versions, the curve). ``harness-gym headroom --policies
... online`` reads the entry's episodes back (``online_records``), so the online reference is paired with
every other reference on the same protocol episodes.

Nothing here imports sb3 or torch: reading the scores needs neither.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ONLINE = "online"
"""The reference's name in ``harness-gym headroom``."""
ONLINE_FILE = Path(__file__).parents[1] / "data" / "online.json"
"""Where the online reference's scores on layout v1 live by default (absent until a full training run
writes it)."""
ONLINE_FILES: dict[str, Path] = {"v1": ONLINE_FILE, "v2": ONLINE_FILE.with_name("online_v2.json")}
"""The default file of each observation layout: an env id has one entry per layout, each in its own file."""


def online_file(obs_layout: str = "v1") -> Path:
    """The default file of ``obs_layout``'s online reference."""
    try:
        return ONLINE_FILES[obs_layout]
    except KeyError:
        raise OnlineError(
            f"unknown obs_layout {obs_layout!r}; expected one of {', '.join(ONLINE_FILES)}"
        ) from None


FLAT_WINDOW = 3
"""The flatness rule's window: the last this many learning-curve points."""


class OnlineError(ValueError):
    """The online reference's file is missing, malformed or does not match the measurement."""


def is_flat(points: Sequence[Sequence[float]], window: int = FLAT_WINDOW, min_steps: int = 0) -> bool:
    """Whether a learning curve has stopped rising: its last ``window`` points ``[step, G, se]`` lie
    within their standard error of each other (max G - min G <= the largest of their SEs) and the last
    point is at ``min_steps`` env steps or later. Fewer points than ``window``: not flat.

    The points are measured on the same validation episodes every time, so their difference is paired
    and the SE of one point (over episodes) is a generous yardstick: the rule stops once a further
    ``window - 1`` evaluations changed mean G by less than the noise of one."""
    if window < 2:
        raise ValueError(f"window must be at least 2, got {window}")
    if len(points) < window or points[-1][0] < min_steps:
        return False
    last = points[-window:]
    values = [float(p[1]) for p in last]
    return max(values) - min(values) <= max(float(p[2]) for p in last)


def curve_point(step: int, values: Sequence[float]) -> list[float]:
    """``[step, mean G, standard error of the mean]`` of one evaluation of the curve."""
    n = len(values)
    if n < 2:
        raise ValueError(f"a curve point needs at least 2 episodes, got {n}")
    mean = sum(values) / n
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
    return [int(step), mean, se]


def read_online(path: str | Path | None = None, obs_layout: str = "v1") -> dict[str, Any]:
    """The whole file (``{"method": ..., "settings": {env_id: entry}}``; by default ``obs_layout``'s); a
    missing file is an empty table."""
    path = Path(path) if path is not None else online_file(obs_layout)
    if not path.exists():
        return {"settings": {}}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise OnlineError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
        raise OnlineError(f"{path}: no 'settings' table of online-reference entries")
    return data


def write_online(
    entries: Mapping[str, Mapping[str, Any]],
    method: Mapping[str, Any],
    path: str | Path | None = None,
    obs_layout: str = "v1",
) -> Path:
    """Add (or replace) the entries of their env ids in the file (by default ``obs_layout``'s), keeping the
    others; sorted keys."""
    path = Path(path) if path is not None else online_file(obs_layout)
    data = read_online(path)
    data["method"] = dict(method)
    data["settings"] = {**data["settings"], **entries}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def online_records(
    env_id: str,
    episodes: Sequence[tuple[int, str, int, int]],
    path: str | Path | None = None,
    obs_layout: str = "v1",
    executor_profile: str = "default",
) -> list[dict[str, Any]]:
    """The online reference's ``{task_id, seed, rollout, G}`` on ``episodes`` (``protocol_episodes``'
    ``(seed, task_id, rollout, episode_seed)``), read from the file: an entry for ``env_id`` played with
    the same layout and executor profile must hold every one of them."""
    source = Path(path) if path is not None else online_file(obs_layout)
    entry = read_online(source)["settings"].get(env_id)
    if entry is None:
        raise OnlineError(
            f"no online reference for {env_id} in {source}; train one with "
            f"`harness-gym headroom --env {env_id} --train-online`"
        )
    for key, wanted in (("obs_layout", obs_layout), ("executor_profile", executor_profile)):
        if entry.get(key) != wanted:
            raise OnlineError(
                f"{source}: the online reference of {env_id} has {key} {entry.get(key)!r}, "
                f"this measurement {wanted!r}"
            )
    by_key = {(r["task_id"], int(r["seed"]), int(r["rollout"])): float(r["G"]) for r in entry["episodes"]}
    out, missing = [], 0
    for seed, task_id, rollout, _ in episodes:
        g = by_key.get((task_id, int(seed), int(rollout)))
        missing += g is None
        out.append({"task_id": task_id, "seed": int(seed), "rollout": int(rollout), "G": g})
    if missing:
        raise OnlineError(
            f"{source}: the online reference of {env_id} lacks {missing} of {len(episodes)} "
            "protocol episodes (trained on other seeds?)"
        )
    return out
