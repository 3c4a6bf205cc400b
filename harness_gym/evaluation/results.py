"""Results files: per-setting, per-seed scores in a versioned schema that anyone can add a row to.

A results document (``harness_gym/schema/results-v1.json``, JSON Schema) holds, for every setting it
covers, the eval tasks in protocol order, the reference scores the normalised scores use, and for every
policy its per-seed normalised scores and the G of every episode in protocol order (seed, then task, then
rollout). It records the protocol (split, seeds, rollouts, ``PROTOCOL_VERSION``) and the simulator
(``SIMULATOR_VERSION``, the executor profile or a chat LLM's settings) the episodes were played under.

``harness-gym bench`` writes its ``results.json`` in this schema (beside the bench's own keys),
``harness_gym.evaluate_policy(...).write_results`` and ``harness-gym evaluate --results-out`` write one
for an outside policy, and ``merge`` joins documents whose protocol and simulator agree, so a
single-algorithm file sits beside the bench's in one ranking (``harness-gym leaderboard``). Every
episode of one protocol is the same across files (same task, seed and rollout: same episode seed), so
every policy in a merged document pairs with every other one, Base included.

Invariants: a document never mixes protocols or simulators; per-seed scores always agree with the
episodes they summarise (``validate`` checks both); ``SCHEMA`` changes only with a new schema file.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym._version import __version__
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.reference_scores import reference_scores
from harness_gym.evaluation.rollout import PROTOCOL_VERSION
from harness_gym.executors.simulated import SIMULATOR_VERSION

__all__ = [
    "KINDS",
    "SCHEMA",
    "SCHEMA_FILE",
    "ResultsError",
    "document",
    "episode_scores",
    "load",
    "merge",
    "policy_meta",
    "protocol",
    "runs",
    "setting",
    "simulator",
    "validate",
    "write",
]

SCHEMA = "harness-gym-results-v1"
SCHEMA_FILE = Path(__file__).parents[1] / "schema" / "results-v1.json"
KINDS = ("scripted", "reference", "learner", "outside")
"""What a policy is (the schema's ``kind``): only ``reference`` policies are left out of rankings."""
G_DECIMALS = 6
"""Episode G is stored rounded to this many decimals (the per-seed scores from the unrounded values)."""
SCORE_TOLERANCE = 1e-3
"""How far (normalised points) a per-seed score may lie from the mean of its stored, rounded episodes."""


class ResultsError(ValueError):
    """A results file that is unreadable, breaks the schema, or cannot be merged; the message says why."""


# -- building a document ---------------------------------------------------------------------------
def protocol(split: str = "eval", seeds: Sequence[int] = EVAL_SEEDS, rollouts: int = EVAL_ROLLOUTS) -> dict:
    """The protocol record: which episodes were played."""
    return {
        "version": PROTOCOL_VERSION,
        "split": split,
        "seeds": [int(s) for s in seeds],
        "rollouts": rollouts,
    }


def simulator(executor: Any = None, profile: Any = None, obs_layout: str = "v1") -> dict[str, Any]:
    """The simulator record: ``executor`` None (the simulated executor) or a chat LLM's config or executor;
    ``profile`` the simulated executor's profile spec (None: ``$HARNESS_GYM_EXECUTOR_PROFILE`` or default);
    ``obs_layout`` the MDP played, recorded when not the paper's (v1), so v1 and v2 results never merge."""
    config = getattr(executor, "config", executor)
    layout = {} if obs_layout == "v1" else {"obs_layout": obs_layout}
    if config is not None and hasattr(config, "content_key"):
        return {"version": SIMULATOR_VERSION, "executor": config.content_key(), "profile": None, **layout}
    if config not in (None, "simulated"):
        raise ResultsError(f"cannot record executor {executor!r}: only the simulated executor or a chat LLM")
    from harness_gym.evaluation.protocol import profile_record

    record = {"version": SIMULATOR_VERSION, "executor": "simulated", "profile": profile_record(profile)}
    return {**record, **layout}


def policy_meta(kind: str, per_seed_models: bool = False, act: str | None = None) -> dict[str, Any]:
    """How a document describes a policy (``KINDS``; ``act`` only for a learner that can sample or not)."""
    if kind not in KINDS:
        raise ResultsError(f"unknown policy kind {kind!r}; expected one of {KINDS}")
    meta: dict[str, Any] = {"kind": kind, "per_seed_models": bool(per_seed_models)}
    if act is not None:
        meta["act"] = act
    return meta


def setting(env_id: str, tasks: Sequence[str], obs_layout: str = "v1") -> dict[str, Any]:
    """One setting's record without policies: its tasks in protocol order and its reference scores (those
    of ``obs_layout``'s MDP)."""
    random, expert = reference_scores(env_id, obs_layout)
    return {"tasks": list(tasks), "reference": {"random": random, "expert": expert}, "policies": {}}


def runs(
    env_id: str,
    episodes: Sequence[Any],
    tasks: Sequence[str],
    seeds: Sequence[int],
    rollouts: int,
    obs_layout: str = "v1",
) -> dict[str, Any]:
    """A policy's record on one setting from its episodes (``EpisodeResult``): per-seed normalised scores
    (against ``obs_layout``'s reference scores) and every episode's G in protocol order. Every (task, seed,
    rollout) of the protocol must be there once."""
    from harness_gym.evaluation.reference_scores import normalized_score

    by_key = {(r.seed, r.task_id, r.rollout): float(r.G) for r in episodes}
    wanted = [(int(s), t, k) for s in seeds for t in tasks for k in range(rollouts)]
    missing = [key for key in wanted if key not in by_key]
    if missing or len(by_key) != len(wanted) or len(episodes) != len(wanted):
        raise ResultsError(
            f"{env_id}: episodes do not cover the protocol once each ({len(episodes)} episodes for "
            f"{len(wanted)} (seed, task, rollout) triples; missing e.g. {missing[:3]})"
        )
    per_seed = len(tasks) * rollouts
    G = np.array([by_key[key] for key in wanted])
    scores = {
        str(int(s)): normalized_score(env_id, float(G[i * per_seed : (i + 1) * per_seed].mean()), obs_layout)
        for i, s in enumerate(seeds)
    }
    return {"seed_scores": scores, "episode_G": [round(float(g), G_DECIMALS) for g in G]}


def document(
    protocol: Mapping[str, Any],
    simulator: Mapping[str, Any],
    policies: Mapping[str, Mapping[str, Any]],
    scores: Mapping[str, Any],
    smoke: bool = False,
) -> dict[str, Any]:
    """A results document; validated before it is returned."""
    doc = {
        "schema": SCHEMA,
        "harness_gym": __version__,
        "protocol": dict(protocol),
        "simulator": dict(simulator),
        "smoke": bool(smoke),
        "policies": {name: dict(meta) for name, meta in policies.items()},
        "scores": json.loads(json.dumps(scores)),
    }
    return validate(doc)


# -- checking and reading --------------------------------------------------------------------------
@cache
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text())
    return jsonschema.Draft202012Validator(schema)


def _non_finite(value: Any, path: tuple = ()) -> tuple[tuple, float] | None:
    """The path and value of the first NaN or infinity in a JSON-like document, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, Mapping):
        items: Any = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite(item, (*path, key))
        if found is not None:
            return found
    return None


def validate(doc: Any, where: str = "results") -> Any:
    """``doc`` if it follows the schema and its numbers agree with one another; else a ``ResultsError``
    naming the first problem and where it is. A NaN or infinity anywhere is refused: JSON has neither
    (Python's reader takes them), and the schema's bounds let NaN through."""
    import jsonschema

    found = _non_finite(doc)
    if found is not None:
        path = "/".join(str(p) for p in found[0]) or "the top level"
        raise ResultsError(f"{where} does not follow {SCHEMA} at {path}: {found[1]} is not a finite number")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "the top level"
        message = error.message if len(error.message) <= 200 else error.message[:200] + " ..."
        raise ResultsError(f"{where} does not follow {SCHEMA} at {path}: {message}")
    seeds = [str(s) for s in doc["protocol"]["seeds"]]
    rollouts = doc["protocol"]["rollouts"]
    for env_id, entry in doc["scores"].items():
        n = len(entry["tasks"]) * rollouts
        random, expert = entry["reference"]["random"], entry["reference"]["expert"]
        for name, run in entry["policies"].items():
            at = f"{where}: {env_id} {name}"
            if name not in doc["policies"]:
                raise ResultsError(f"{at}: the policy is not described under 'policies'")
            if sorted(run["seed_scores"], key=int) != sorted(seeds, key=int):
                raise ResultsError(
                    f"{at}: seed scores for seeds {list(run['seed_scores'])}, protocol seeds {seeds}"
                )
            if len(run["episode_G"]) != n * len(seeds):
                raise ResultsError(
                    f"{at}: {len(run['episode_G'])} episodes, the protocol has {n * len(seeds)}"
                )
            G = np.asarray(run["episode_G"], dtype=float).reshape(len(seeds), n)
            for i, seed in enumerate(seeds):
                score = 100.0 * (G[i].mean() - random) / (expert - random)
                if not abs(score - run["seed_scores"][seed]) <= SCORE_TOLERANCE:
                    raise ResultsError(
                        f"{at}: seed {seed} scores {run['seed_scores'][seed]:.4f} "
                        f"but its episodes give {score:.4f}"
                    )
    return doc


def load(path: str | os.PathLike) -> dict[str, Any]:
    """A results file, validated (``ResultsError`` naming the file otherwise)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"no results file {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path} is not a readable JSON file ({exc})") from None
    if isinstance(doc, dict) and "schema" not in doc:
        raise ResultsError(
            f"{path} has no 'schema' key: not a {SCHEMA} file (written by an older harness-gym?)"
        )
    return validate(doc, str(path))


def write(doc: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """``doc`` as indented JSON, arrays of plain numbers on one line each (episode G arrays stay short)."""
    path = Path(path)
    text = json.dumps(doc, indent=1, default=json_default)
    flat = lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]"  # noqa: E731
    text = re.sub(r"\[([-0-9.eE+,\s]+)\]", flat, text)
    path.write_text(text + "\n")
    return path


def json_default(obj: Any) -> Any:
    """numpy scalars and arrays, paths and sets, for ``json.dumps``."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def episode_scores(doc: Mapping[str, Any], env_id: str, name: str) -> np.ndarray:
    """Normalised score of every episode of ``name`` on ``env_id``, shape (seeds x episodes per seed):
    the per-seed scores are these rows' means."""
    entry = doc["scores"][env_id]
    random, expert = entry["reference"]["random"], entry["reference"]["expert"]
    G = np.asarray(entry["policies"][name]["episode_G"], dtype=float)
    return (100.0 * (G - random) / (expert - random)).reshape(len(doc["protocol"]["seeds"]), -1)


# -- merging ---------------------------------------------------------------------------------------
def _differ(a: Any, b: Any) -> str:
    """The first key at which two records differ, for a one-line message."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key) != b.get(key):
                return f"{key} {a.get(key)!r} vs {b.get(key)!r}"
    return f"{a!r} vs {b!r}"


def merge(named: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One document from several ``(name, document)`` pairs that share protocol and simulator.

    Refused (``ResultsError``, one line naming both files): another protocol or simulator; another task
    list or reference score on a shared setting; a policy described differently, or with other episodes
    on a shared setting (a policy present in two files, Base always, must have played identically).
    The merged document is a smoke run when any part is."""
    if not named:
        raise ResultsError("no results to merge")
    first_name, first = named[0]
    merged: dict[str, Any] = {
        "schema": SCHEMA,
        "harness_gym": ", ".join(sorted({doc["harness_gym"] for _, doc in named})),
        "protocol": first["protocol"],
        "simulator": first["simulator"],
        "smoke": any(doc["smoke"] for _, doc in named),
        "policies": {},
        "scores": {},
    }
    origin: dict[tuple[str, str], str] = {}
    for name, doc in named:
        for key in ("protocol", "simulator"):
            if doc[key] != first[key]:
                raise ResultsError(
                    f"{name} cannot be merged with {first_name}: another {key} "
                    f"({_differ(first[key], doc[key])})"
                )
        for policy, meta in doc["policies"].items():
            known = merged["policies"].setdefault(policy, meta)
            if known != meta:
                raise ResultsError(
                    f"policy {policy!r} is described differently in {name} ({_differ(known, meta)})"
                )
        for env_id, entry in doc["scores"].items():
            target = merged["scores"].setdefault(
                env_id, {"tasks": entry["tasks"], "reference": entry["reference"], "policies": {}}
            )
            for key in ("tasks", "reference"):
                if target[key] != entry[key]:
                    raise ResultsError(
                        f"{name} cannot be merged on {env_id}: other {key} than the files before it"
                    )
            for policy, run in entry["policies"].items():
                known = target["policies"].setdefault(policy, run)
                if known["episode_G"] != run["episode_G"]:
                    raise ResultsError(
                        f"{policy!r} on {env_id} played other episodes in {name} than in "
                        f"{origin[env_id, policy]}; the runs are not comparable (another executor, profile "
                        "or code?)"
                    )
                origin.setdefault((env_id, policy), name)
    return validate(merged, "merged results")
