"""What the task generators share: the task record, family splits, seeded draws and the flawed pool.

Every ``<setting>/generate.py`` is deterministic: the same code writes the same task file byte for byte
(``core.task.write_jsonl`` fixes the key order). Most settings build their tasks from template families,
each with a ``template`` name, a ``difficulty`` and a ``count`` of tasks; :func:`family_records` draws
them, :func:`family_splits` says which split a family will land in before anything is drawn (so a
held-out family can get its own entities and formats), and :func:`flawed_pool` picks the executor's
wrong artifacts from the candidates a generator wrote, once each is verified to fail as its label says.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

from harness_gym.core.task import Task, packaged_task_file, stratified_split, write_generated

VERSION = "v0"
"""The version of the paper's generated task sets (the ``-v0`` of the env ids and task files)."""
MDP2_VERSION = "v1"
"""The version of the task sets of MDP v2 (``obs_layout="v2"``, ``Domain.mdp2_task_file``): tasks that
differ in what they need."""

POOL_MIN, POOL_MAX = 5, 8
"""How many flawed artifacts a task's pool holds."""


class Reject(Exception):
    """A draw misses a requirement of its family (coinciding values, too few flawed variants, ...);
    draw again."""


class Family(Protocol):
    """A template family: ``count`` tasks of one ``template`` and ``difficulty``."""

    @property
    def template(self) -> str: ...

    @property
    def difficulty(self) -> str: ...

    @property
    def count(self) -> int: ...


F = TypeVar("F", bound=Family)


def task_file(domain: str, version: str = VERSION) -> Path:
    """The shipped task file of a setting: ``harness_gym/data/<domain>-<version>.jsonl``."""
    return packaged_task_file(f"{domain}-{version}.jsonl")


def write_versioned(
    domain: str, generate: Callable[[str], list[dict[str, Any]]], argv: Sequence[str] | None = None
) -> int:
    """A generator's command line ``[--version v1] [path]``: write the v0 task set (default) or MDP v2's
    (``generate(version)``) to ``path`` or to the shipped file."""
    args = list(argv or ())
    version = VERSION
    if args[:1] == ["--version"]:
        if len(args) < 2 or args[1] not in (VERSION, MDP2_VERSION):
            raise SystemExit(f"--version must be {VERSION} or {MDP2_VERSION}")
        version, args = args[1], args[2:]
    return write_generated(partial(generate, version), task_file(domain, version), args)


def task_record(
    domain: str,
    task_id: str,
    difficulty: str,
    split: str,
    template: str,
    prompt: str,
    payload: Any,
    version: str = VERSION,
) -> dict[str, Any]:
    """One line of a task file."""
    return Task(task_id, domain, version, difficulty, split, template, prompt, payload).to_record()


def family_splits(domain: str, families: Sequence[Family]) -> dict[str, str]:
    """The split of each family's template, from the family structure alone (``stratified_split``, seed
    0, over the task ids ``family_records`` gives), so it is known before anything is drawn."""
    kinds = [(family.difficulty, family.template) for family in families for _ in range(family.count)]
    items = [(f"{domain}-{number:03d}", *kind) for number, kind in enumerate(kinds)]
    split = stratified_split(items, seed=0)
    return {template: split[task_id] for task_id, _, template in items}


def _draw(build: Callable[[], Any], attempts: int, what: str) -> Any:
    """``build()``, called again after each ``Reject``, at most ``attempts`` times."""
    for _ in range(attempts):
        try:
            return build()
        except Reject:
            continue
    raise RuntimeError(f"could not build {what}")


def family_records(
    domain: str,
    families: Sequence[F],
    build: Callable[[F, random.Random], tuple[str, Any]],
    attempts: int,
    seed_name: Callable[[F], str] | None = None,
    version: str = VERSION,
) -> list[dict[str, Any]]:
    """The task records of every family, ``count`` tasks each, numbered ``<domain>-000`` on.

    Task ``index`` of a family draws from ``random.Random(f"<domain>-<version>/<name>/<index>")``, ``<name>``
    being ``seed_name(family)`` (default: its template); ``build(family, rng)`` returns ``(prompt,
    payload)`` or raises ``Reject`` to draw again from the same generator. A task's split is its family's
    (``family_splits``), so families stay whole.
    """
    templates = [family.template for family in families]
    if len(set(templates)) != len(templates):
        raise AssertionError("template names must be unique")
    name = seed_name or (lambda family: family.template)
    splits = family_splits(domain, families)
    records = []
    for family in families:
        for index in range(family.count):
            rng = random.Random(f"{domain}-{version}/{name(family)}/{index}")
            prompt, payload = _draw(partial(build, family, rng), attempts, f"task {index} of {name(family)}")
            split, task_id = splits[family.template], f"{domain}-{len(records):03d}"
            records.append(
                task_record(
                    domain, task_id, family.difficulty, split, family.template, prompt, payload, version
                )
            )
    return records


def flawed_pool(
    candidates: Mapping[str, Sequence[str]],
    flaws: Sequence[str],
    reference: str,
    fails: Callable[[str, str], bool],
    rng: random.Random,
    size: tuple[int, int] = (POOL_MIN, POOL_MAX),
) -> list[dict[str, str]]:
    """Flawed artifacts for a task's pool, ``{"flaw", "source"}`` each, the flaw kinds taken in turn.

    Of each kind's ``candidates`` (in ``flaws`` order) only the new ones that ``fails(flaw, text)``
    confirms are kept, then shuffled; the pool takes one of each kind in turn until it holds a size drawn
    from ``size``. Raises ``Reject`` when fewer than ``POOL_MIN`` could be kept.
    """
    seen = {reference}
    usable: dict[str, list[str]] = {}
    for flaw in flaws:
        kept = []
        for text in candidates[flaw]:
            if text in seen or not fails(flaw, text):
                continue
            seen.add(text)
            kept.append(text)
        rng.shuffle(kept)
        usable[flaw] = kept
    target = rng.randint(*size)
    pool: list[dict[str, str]] = []
    while len(pool) < target and any(usable.values()):
        for flaw in flaws:
            if usable[flaw] and len(pool) < target:
                pool.append({"flaw": flaw, "source": usable[flaw].pop(0)})
    if len(pool) < POOL_MIN:
        raise Reject("not enough flawed variants")
    return pool


def apportion(counts: dict[int, float], total: int) -> dict[int, int]:
    """``total`` split in proportion to ``counts`` by largest remainder (ties: the smaller key)."""
    norm = sum(counts.values())
    exact = {k: total * v / norm for k, v in counts.items()}
    out = {k: int(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[: total - sum(out.values())]:
        out[k] += 1
    return out
