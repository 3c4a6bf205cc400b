"""Planning problems (blocks world, truck logistics): plan parser, validator and optimal search.

A plan is plain text, one ``name(arg, ...)`` action per line; blank lines are ignored and names are
case-insensitive. Validation simulates the plan so that every fault can be pinned to a line and step: a
line that does not parse is reported and skipped (the remaining actions still run, so a single slip does
not hide how far the rest of the plan gets), the first action whose preconditions fail stops execution,
and extra constraints are monitored on every executed step. Goals are checked in the state where
execution ended.

The same transition rules drive an A* search with admissible heuristics, so reference plans are optimal
under exactly the semantics the validator enforces.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from harness_gym.executors.base import Finding

TABLE = "table"
KINDS = ("blocks", "logistics")

# Argument names of each constraint spec, in the order used by its label ``kind(arg, ...)``.
CONSTRAINT_ARGS: dict[str, dict[str, tuple[str, ...]]] = {
    "blocks": {
        "never_on": ("block", "onto"),
        "fixed": ("block",),
        "before": ("first", "second"),
        "max_table": ("k",),
        "max_steps": ("n",),
    },
    "logistics": {
        "avoid": ("truck", "location"),
        "capacity": ("truck", "k"),
        "deliver_before": ("first", "second"),
        "max_steps": ("n",),
    },
}

# Start state, successor function (action text, next state), admissible heuristic, goal test.
SearchSpace = tuple[
    Hashable, Callable[[Any], Iterator[tuple[str, Any]]], Callable[[Any], int], Callable[[Any], bool]
]

_ACTION_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$")
_NAME_RE = re.compile(r"^[a-z0-9_][a-z0-9_\-]*$")


def constraint_label(spec: dict[str, Any]) -> str:
    """Compact form such as ``never_on(red, blue)``: the name used in prompts and violation messages."""
    for table in CONSTRAINT_ARGS.values():
        if spec["kind"] in table:
            return f"{spec['kind']}({', '.join(str(spec[name]) for name in table[spec['kind']])})"
    raise ValueError(f"unknown constraint kind {spec['kind']!r}")


# --------------------------------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class Step:
    """One parsed action; ``line`` is 1-based in the submitted text so messages can point at it."""

    name: str
    args: tuple[str, ...]
    line: int

    def text(self) -> str:
        return f"{self.name}({', '.join(self.args)})"


def _show(line: str, limit: int = 60) -> str:
    line = line.strip()
    return repr(line if len(line) <= limit else line[: limit - 3] + "...")


MAX_PLAN_STEPS = 200
"""The longest plan validated, in non-empty lines: ten times the longest reference plan (18 steps)."""


def parse_plan(
    text: str, signatures: dict[str, tuple[str, ...]], objects: dict[str, frozenset[str]]
) -> tuple[tuple[Step, ...], tuple[str, ...]]:
    """Parse plan text against action signatures (argument types) and the objects of each type. A plan of
    more than ``MAX_PLAN_STEPS`` non-empty lines is not parsed: its one error says so."""
    length = sum(1 for raw in text.splitlines() if raw.strip())
    if length > MAX_PLAN_STEPS:
        return (), (f"the plan has {length} steps, over the bound of {MAX_PLAN_STEPS}",)
    steps: list[Step] = []
    errors: list[str] = []
    names = ", ".join(signatures)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        match = _ACTION_RE.match(raw)
        if match is None:
            errors.append(f"line {lineno}: cannot parse {_show(raw)}: expected one action like {names}(...)")
            continue
        name = match.group(1).lower()
        inner = match.group(2).strip()
        if "(" in inner or ")" in inner:
            errors.append(f"line {lineno}: write exactly one action per line, got {_show(raw)}")
            continue
        args = tuple(arg.strip().lower() for arg in inner.split(",")) if inner else ()
        if name not in signatures:
            errors.append(f"line {lineno}: unknown action {name!r} (known actions: {names})")
            continue
        types = signatures[name]
        if len(args) != len(types):
            errors.append(
                f"line {lineno}: {name} takes {len(types)} arguments ({', '.join(types)}), got {len(args)}"
            )
            continue
        bad = None
        for position, (arg, kind) in enumerate(zip(args, types, strict=True), start=1):
            if not _NAME_RE.match(arg):
                bad = f"line {lineno}: argument {position} of {name} is not a name: {arg!r}"
            elif arg not in objects[kind]:
                bad = f"line {lineno}: unknown {kind} {arg!r} (argument {position} of {name})"
            if bad:
                break
        if bad:
            errors.append(bad)
            continue
        steps.append(Step(name, args, lineno))
    return tuple(steps), tuple(errors)


# --------------------------------------------------------------------------------------------------
# Reports


@dataclass(frozen=True)
class PlanReport:
    """Outcome of simulating a plan; every message names the line/step and objects at fault."""

    parsed_steps: int
    format_errors: tuple[str, ...]
    illegal_step: int | None
    illegal_reason: str | None
    constraint_violations: tuple[str, ...]
    goals_met: int
    goals_total: int
    constraints_total: int = 0
    illegal_line: int | None = None
    unexecuted_steps: int = 0
    unmet_goals: tuple[str, ...] = ()
    goals_needed: int | None = None
    """Goal atoms that do not hold in the initial state (None: not measured, every atom counts)."""
    goals_gained: int = 0
    """Goal atoms that did not hold initially and hold at the end."""
    goals_lost: int = 0
    """Goal atoms that held initially and no longer hold at the end."""

    @property
    def progress(self) -> float:
        """Fraction of the goal the plan itself achieved: atoms already true at the start earn nothing,
        atoms the plan broke cost one each (floored at 0)."""
        if self.goals_needed is None:
            return self.goals_met / self.goals_total if self.goals_total else 1.0
        if self.goals_needed == 0:
            return float(self.goals_met == self.goals_total)
        return max(0, self.goals_gained - self.goals_lost) / self.goals_needed

    @property
    def valid(self) -> bool:
        return (
            self.parsed_steps > 0
            and not self.format_errors
            and self.illegal_step is None
            and not self.constraint_violations
            and self.goals_met == self.goals_total
        )

    @property
    def issues(self) -> tuple[Finding, ...]:
        found: list[Finding] = []
        if self.parsed_steps == 0 and not self.format_errors:
            found.append(Finding("empty", "the plan is empty: no actions found"))
        found.extend(Finding("format", f"format: {error}") for error in self.format_errors)
        if self.illegal_step is not None:
            tail = f"; {self.unexecuted_steps} later step(s) not executed" if self.unexecuted_steps else ""
            found.append(
                Finding(
                    "illegal_step",
                    f"illegal: step {self.illegal_step} (line {self.illegal_line}) {self.illegal_reason}; "
                    f"execution stopped there{tail}",
                )
            )
        found.extend(
            Finding("constraint", f"constraint: {violation}") for violation in self.constraint_violations
        )
        found.extend(Finding("goal_unmet", f"goal: {goal}") for goal in self.unmet_goals)
        return tuple(found)


@dataclass(frozen=True)
class _Run:
    """What execution produced, before goals are checked."""

    state: Any
    illegal_step: int | None
    illegal_reason: str | None
    violations: tuple[str, ...]


def _where(step: int, action: Step) -> str:
    return f"step {step} (line {action.line}) {action.text()}"


def _max_steps_violations(constraints: Sequence[dict[str, Any]], n_steps: int) -> list[str]:
    out = []
    for spec in constraints:
        if spec["kind"] == "max_steps" and n_steps > spec["n"]:
            out.append(
                f"the plan has {n_steps} steps but {constraint_label(spec)} allows {spec['n']} "
                f"(steps {spec['n'] + 1}-{n_steps} are over the limit)"
            )
    return out


# --------------------------------------------------------------------------------------------------
# Blocks world


class BlocksWorld:
    """Blocks on a table; ``move(X, Y)`` puts clear block X on clear block Y or on the table."""

    kind = "blocks"
    signatures: ClassVar[dict[str, tuple[str, ...]]] = {"move": ("block", "destination")}

    def __init__(self, problem: dict[str, Any], constraints: Sequence[dict[str, Any]]) -> None:
        self.blocks: tuple[str, ...] = tuple(problem["blocks"])
        self.objects = {"block": frozenset(self.blocks), "destination": frozenset((*self.blocks, TABLE))}
        self.init: dict[str, str] = {}
        for stack in problem["stacks"]:
            below = TABLE
            for block in stack:
                self.init[block] = below
                below = block
        self.goal: tuple[tuple[str, str], ...] = tuple((atom[1], atom[2]) for atom in problem["goal"])
        self.constraints = tuple(constraints)

    @staticmethod
    def action_text(x: str, y: str) -> str:
        return f"move({x}, {y})"

    def run(self, steps: Sequence[Step]) -> _Run:
        on = dict(self.init)
        top = {below: block for block, below in on.items() if below != TABLE}
        tables = sum(1 for below in on.values() if below == TABLE)
        moved: set[str] = set()
        found: dict[int, str] = {}
        for index, action in enumerate(steps, start=1):
            x, y = action.args
            reason = None
            if x == y:
                reason = f"cannot move {x} onto itself"
            elif x in top:
                reason = f"{x} is not clear ({top[x]} is on {x})"
            elif y == TABLE and on[x] == TABLE:
                reason = f"{x} is already on the table"
            elif y != TABLE and y in top:
                reason = f"{y} is not clear ({top[y]} is on {y})"
            if reason is not None:
                return _Run(on, index, f"{action.text()}: {reason}", tuple(found.values()))
            below = on[x]
            if below == TABLE:
                tables -= 1
            else:
                del top[below]
            if y == TABLE:
                tables += 1
            else:
                top[y] = x
            on[x] = y
            for ci, spec in enumerate(self.constraints):
                if ci in found:
                    continue
                kind = spec["kind"]
                label = constraint_label(spec)
                if kind == "fixed" and spec["block"] == x:
                    found[ci] = f"{_where(index, action)} moves {x}, which {label} forbids moving"
                elif kind == "never_on" and spec["block"] == x and spec["onto"] == y:
                    found[ci] = f"{_where(index, action)} puts {x} directly on {y}, forbidden by {label}"
                elif (
                    kind == "before" and spec["second"] == x and x not in moved and spec["first"] not in moved
                ):
                    found[ci] = (
                        f"{_where(index, action)} moves {x} before {spec['first']} has been moved, "
                        f"breaking {label}"
                    )
                elif kind == "max_table" and tables > spec["k"]:
                    found[ci] = (
                        f"{_where(index, action)} leaves {tables} stacks on the table, "
                        f"more than {label} allows"
                    )
            moved.add(x)
        return _Run(on, None, None, tuple(found.values()))

    def goal_report(self, state: dict[str, str], goal: Sequence[tuple[str, str]] | None = None) -> list[str]:
        """Descriptions of unmet goal atoms (empty when every goal holds)."""
        unmet = []
        for x, y in self.goal if goal is None else goal:
            if state[x] != y:
                where = "on the table" if state[x] == TABLE else f"on {state[x]}"
                unmet.append(f"on({x}, {y}) not met: {x} is {where}")
        return unmet

    # ---- search

    def search_space(self, goal: Sequence[tuple[str, str]] | None = None) -> SearchSpace:
        """Start state, successor function, admissible heuristic and goal test, constraints built in."""
        n = len(self.blocks)
        idx = {block: i for i, block in enumerate(self.blocks)}
        tbl = -1  # the table, in index form (must match _must_move)
        names = self.blocks
        goal_pairs = [
            (idx[x], tbl if y == TABLE else idx[y]) for x, y in (self.goal if goal is None else goal)
        ]
        goal_support = dict(goal_pairs)
        goal_below = {y: x for x, y in goal_pairs if y != tbl}
        fixed: set[int] = set()
        never: set[tuple[int, int]] = set()
        needs: dict[int, list[int]] = {}
        tracked: dict[int, int] = {}
        max_table: int | None = None
        for spec in self.constraints:
            kind = spec["kind"]
            if kind == "fixed":
                fixed.add(idx[spec["block"]])
            elif kind == "never_on":
                never.add((idx[spec["block"]], idx[spec["onto"]]))
            elif kind == "before":
                first = idx[spec["first"]]
                tracked.setdefault(first, len(tracked))
                needs.setdefault(idx[spec["second"]], []).append(first)
            elif kind == "max_table":
                max_table = spec["k"] if max_table is None else min(max_table, spec["k"])
        need_bits = {x: sum(1 << tracked[f] for f in firsts) for x, firsts in needs.items()}
        own_bit = {x: 1 << bit for x, bit in tracked.items()}
        start = (tuple(tbl if self.init[b] == TABLE else idx[self.init[b]] for b in names), 0)

        def successors(state: tuple[tuple[int, ...], int]) -> Iterator[tuple[str, Any]]:
            on, bits = state
            occupied = set(on)
            clear = [i for i in range(n) if i not in occupied]
            tables = on.count(tbl)
            for x in clear:
                if x in fixed:
                    continue
                need = need_bits.get(x, 0)
                if bits & need != need:
                    continue
                new_bits = bits | own_bit.get(x, 0)
                below = on[x]
                if below != tbl and (max_table is None or tables < max_table):
                    yield self.action_text(names[x], TABLE), ((*on[:x], tbl, *on[x + 1 :]), new_bits)
                for y in clear:
                    if y != x and (x, y) not in never:
                        yield self.action_text(names[x], names[y]), ((*on[:x], y, *on[x + 1 :]), new_bits)

        def heuristic(state: tuple[tuple[int, ...], int]) -> int:
            return len(_must_move(state[0], goal_support, goal_below))

        def is_goal(state: tuple[tuple[int, ...], int]) -> bool:
            on = state[0]
            return all(on[x] == y for x, y in goal_pairs)

        return start, successors, heuristic, is_goal

    def must_move(self) -> frozenset[str]:
        """Blocks that every plan from the initial state has to move at least once."""
        idx = {block: i for i, block in enumerate(self.blocks)}
        on = tuple(-1 if self.init[b] == TABLE else idx[self.init[b]] for b in self.blocks)
        pairs = [(idx[x], -1 if y == TABLE else idx[y]) for x, y in self.goal]
        needed = _must_move(on, dict(pairs), {y: x for x, y in pairs if y != -1})
        return frozenset(self.blocks[i] for i in needed)


def _must_move(on: tuple[int, ...], goal_support: dict[int, int], goal_below: dict[int, int]) -> set[int]:
    """Blocks (indices; -1 is the table) that must still move: each needs at least one action.

    A block must move if it is not on its goal support, if it sits on a block that must move, or if it
    occupies a block that the goal reserves for another block.
    """
    memo: dict[int, bool] = {}

    def must(x: int) -> bool:
        if x not in memo:
            below = on[x]
            memo[x] = (
                (x in goal_support and below != goal_support[x])
                or (below != -1 and must(below))
                or (below != -1 and below in goal_below and goal_below[below] != x)
            )
        return memo[x]

    return {x for x in range(len(on)) if must(x)}


# --------------------------------------------------------------------------------------------------
# Logistics


class LogisticsWorld:
    """Trucks drive along roads between locations, loading and unloading packages."""

    kind = "logistics"
    signatures: ClassVar[dict[str, tuple[str, ...]]] = {
        "drive": ("truck", "location", "location"),
        "load": ("package", "truck", "location"),
        "unload": ("package", "truck", "location"),
    }

    def __init__(self, problem: dict[str, Any], constraints: Sequence[dict[str, Any]]) -> None:
        self.locations: tuple[str, ...] = tuple(loc for city in problem["cities"].values() for loc in city)
        self.trucks: tuple[str, ...] = tuple(problem["trucks"])
        self.packages: tuple[str, ...] = tuple(problem["packages"])
        self.truck_at: dict[str, str] = dict(problem["trucks"])
        self.package_at: dict[str, str] = dict(problem["packages"])
        self.capacity: dict[str, int] = dict(problem["capacity"])
        self.roads: dict[str, set[str]] = {loc: set() for loc in self.locations}
        for a, b in problem["roads"]:
            self.roads[a].add(b)
            self.roads[b].add(a)
        self.goal: tuple[tuple[str, str], ...] = tuple((atom[1], atom[2]) for atom in problem["goal"])
        self.objects = {
            "truck": frozenset(self.trucks),
            "package": frozenset(self.packages),
            "location": frozenset(self.locations),
        }
        self.constraints = tuple(constraints)

    @staticmethod
    def action_text(name: str, *args: str) -> str:
        return f"{name}({', '.join(args)})"

    def destination(self, goal: Sequence[tuple[str, str]] | None = None) -> dict[str, str]:
        return dict(self.goal if goal is None else goal)

    def run(self, steps: Sequence[Step]) -> _Run:
        truck_at = dict(self.truck_at)
        where = dict(self.package_at)  # package -> location, or truck name while loaded
        load = dict.fromkeys(self.trucks, 0)
        dest = self.destination()
        delivered: set[str] = set()
        found: dict[int, str] = {}
        trucks = self.objects["truck"]
        for index, action in enumerate(steps, start=1):
            name = action.name
            reason = None
            if name == "drive":
                t, src, dst = action.args
                if truck_at[t] != src:
                    reason = f"{t} is at {truck_at[t]}, not at {src}"
                elif dst not in self.roads[src]:
                    reason = f"there is no road from {src} to {dst}"
            else:
                p, t, loc = action.args
                if truck_at[t] != loc:
                    reason = f"{t} is at {truck_at[t]}, not at {loc}"
                elif name == "load":
                    if where[p] in trucks:
                        reason = f"{p} is already in {where[p]}"
                    elif where[p] != loc:
                        reason = f"{p} is at {where[p]}, not at {loc}"
                    elif load[t] >= self.capacity[t]:
                        reason = f"{t} is full (capacity {self.capacity[t]})"
                elif where[p] != t:
                    reason = f"{p} is not in {t}" + (
                        f" (it is in {where[p]})" if where[p] in trucks else f" (it is at {where[p]})"
                    )
            if reason is not None:
                return _Run((truck_at, where), index, f"{action.text()}: {reason}", tuple(found.values()))
            if name == "drive":
                t = action.args[0]
                truck_at[t] = action.args[2]
            elif name == "load":
                p, t, _ = action.args
                where[p] = t
                load[t] += 1
            else:
                p, t, loc = action.args
                where[p] = loc
                load[t] -= 1
            for ci, spec in enumerate(self.constraints):
                if ci in found:
                    continue
                kind = spec["kind"]
                label = constraint_label(spec)
                if kind == "avoid" and name == "drive" and action.args[0] == spec["truck"]:
                    if action.args[2] == spec["location"]:
                        found[ci] = (
                            f"{_where(index, action)} takes {spec['truck']} into {spec['location']}, "
                            f"forbidden by {label}"
                        )
                elif kind == "capacity" and name == "load" and action.args[1] == spec["truck"]:
                    truck = spec["truck"]
                    if load[truck] > spec["k"]:
                        found[ci] = (
                            f"{_where(index, action)} loads {load[truck]} packages into {truck}, "
                            f"more than {label} allows"
                        )
                elif (
                    kind == "deliver_before"
                    and name == "unload"
                    and action.args[0] == spec["second"]
                    and action.args[2] == dest.get(spec["second"])
                    and spec["first"] not in delivered
                ):
                    found[ci] = (
                        f"{_where(index, action)} delivers {spec['second']} before {spec['first']} "
                        f"has been delivered, breaking {label}"
                    )
            if name == "unload" and dest.get(action.args[0]) == action.args[2]:
                delivered.add(action.args[0])
        return _Run((truck_at, where), None, None, tuple(found.values()))

    def goal_report(self, state: Any, goal: Sequence[tuple[str, str]] | None = None) -> list[str]:
        truck_at, where = state
        unmet = []
        for p, loc in self.goal if goal is None else goal:
            if where[p] != loc:
                now = where[p]
                place = f"in {now} (at {truck_at[now]})" if now in truck_at else f"at {now}"
                unmet.append(f"at({p}, {loc}) not met: {p} is {place}")
        return unmet

    # ---- search

    def distances(self) -> list[list[int]]:
        """Fewest drives between locations, by index; ``len(locations) + 1``, more than any path, where no
        road leads."""
        n = len(self.locations)
        idx = {loc: i for i, loc in enumerate(self.locations)}
        big = n + 1
        dist = [[big] * n for _ in range(n)]
        for i, loc in enumerate(self.locations):
            dist[i][i] = 0
            frontier = [loc]
            while frontier:
                nxt = []
                for here in frontier:
                    for there in sorted(self.roads[here]):
                        if dist[i][idx[there]] == big:
                            dist[i][idx[there]] = dist[i][idx[here]] + 1
                            nxt.append(there)
                frontier = nxt
        return dist

    def search_space(self, goal: Sequence[tuple[str, str]] | None = None) -> SearchSpace:
        """Start state, successor function, admissible heuristic and goal test, constraints built in."""
        locs = self.locations
        lidx = {loc: i for i, loc in enumerate(locs)}
        tidx = {t: i for i, t in enumerate(self.trucks)}
        pidx = {p: i for i, p in enumerate(self.packages)}
        n_trucks = len(self.trucks)
        n_packages = len(self.packages)
        dest = self.destination(goal)
        goal_of = [lidx[dest[p]] if p in dest else None for p in self.packages]
        goal_pairs = [(i, g) for i, g in enumerate(goal_of) if g is not None]
        neighbours = [tuple(sorted(lidx[b] for b in self.roads[a])) for a in locs]
        cap = [self.capacity[t] for t in self.trucks]
        avoided: set[tuple[int, int]] = set()
        needs: dict[int, list[int]] = {}
        tracked: dict[int, int] = {}
        for spec in self.constraints:
            kind = spec["kind"]
            if kind == "avoid":
                avoided.add((tidx[spec["truck"]], lidx[spec["location"]]))
            elif kind == "capacity":
                t = tidx[spec["truck"]]
                cap[t] = min(cap[t], spec["k"])
            elif kind == "deliver_before":
                first = pidx[spec["first"]]
                tracked.setdefault(first, len(tracked))
                needs.setdefault(pidx[spec["second"]], []).append(first)
        need_bits = {p: sum(1 << tracked[f] for f in firsts) for p, firsts in needs.items()}
        own_bit = {p: 1 << bit for p, bit in tracked.items()}
        dist = self.distances()
        trucks, packages = self.trucks, self.packages
        start = (
            tuple(lidx[self.truck_at[t]] for t in trucks),
            tuple(lidx[self.package_at[p]] for p in packages),
            0,
        )

        def successors(state: tuple[tuple[int, ...], tuple[int, ...], int]) -> Iterator[tuple[str, Any]]:
            tl, pos, bits = state
            for t in range(n_trucks):
                here = tl[t]
                inside = -(t + 1)
                count = 0
                for p in range(n_packages):
                    if pos[p] == inside:
                        count += 1
                        new_bits = bits
                        if goal_of[p] == here:
                            need = need_bits.get(p, 0)
                            if bits & need != need:
                                continue
                            new_bits |= own_bit.get(p, 0)
                        yield (
                            self.action_text("unload", packages[p], trucks[t], locs[here]),
                            (tl, (*pos[:p], here, *pos[p + 1 :]), new_bits),
                        )
                if count < cap[t]:
                    for p in range(n_packages):
                        if pos[p] == here:
                            yield (
                                self.action_text("load", packages[p], trucks[t], locs[here]),
                                (tl, (*pos[:p], inside, *pos[p + 1 :]), bits),
                            )
                for there in neighbours[here]:
                    if (t, there) not in avoided:
                        yield (
                            self.action_text("drive", trucks[t], locs[here], locs[there]),
                            ((*tl[:t], there, *tl[t + 1 :]), pos, bits),
                        )

        def heuristic(state: tuple[tuple[int, ...], tuple[int, ...], int]) -> int:
            tl, pos, _ = state
            handling = 0
            drives = 0
            for p, g in goal_pairs:
                at = pos[p]
                if at == g:
                    continue
                if at < 0:
                    handling += 1
                    d = dist[tl[-at - 1]][g]
                else:
                    handling += 2
                    d = min(dist[loc][at] for loc in tl) + dist[at][g]
                drives = max(drives, d)
            return handling + drives

        def is_goal(state: tuple[tuple[int, ...], tuple[int, ...], int]) -> bool:
            pos = state[1]
            return all(pos[p] == g for p, g in goal_pairs)

        return start, successors, heuristic, is_goal


World = BlocksWorld | LogisticsWorld


def make_world(kind: str, problem: dict[str, Any], constraints: Sequence[dict[str, Any]]) -> World:
    if kind == "blocks":
        return BlocksWorld(problem, constraints)
    if kind == "logistics":
        return LogisticsWorld(problem, constraints)
    raise ValueError(f"unknown planning kind {kind!r}: expected one of {KINDS}")


# --------------------------------------------------------------------------------------------------
# Public API


def validate_world(world: World, plan_text: str) -> PlanReport:
    """Validate against an already built world (lets callers that validate many plans build it once)."""
    steps, errors = parse_plan(plan_text, world.signatures, world.objects)
    run = world.run(steps)
    violations = list(run.violations)
    violations.extend(_max_steps_violations(world.constraints, len(steps)))
    unmet = world.goal_report(run.state)
    total = len(world.goal)
    start = world.run(()).state
    held = [not world.goal_report(start, [atom]) for atom in world.goal]
    holds = [not world.goal_report(run.state, [atom]) for atom in world.goal]
    return PlanReport(
        parsed_steps=len(steps),
        format_errors=errors,
        illegal_step=run.illegal_step,
        illegal_reason=run.illegal_reason,
        constraint_violations=tuple(violations),
        goals_met=total - len(unmet),
        goals_total=total,
        constraints_total=len(world.constraints),
        illegal_line=None if run.illegal_step is None else steps[run.illegal_step - 1].line,
        unexecuted_steps=0 if run.illegal_step is None else len(steps) - run.illegal_step,
        unmet_goals=tuple(unmet),
        goals_needed=total - sum(held),
        goals_gained=sum(now and not before for before, now in zip(held, holds, strict=True)),
        goals_lost=sum(before and not now for before, now in zip(held, holds, strict=True)),
    )


def validate(payload: dict[str, Any], plan_text: str) -> PlanReport:
    """Parse and simulate ``plan_text`` for the task in ``payload``."""
    return validate_world(make_world(payload["kind"], payload["problem"], payload["constraints"]), plan_text)


CRITERIA: dict[str, float] = {"constraints": 1.0, "goal_coverage": 2.0, "plan_format": 1.0}
"""Rubric criteria and maxima: reaching the goal weighs double, since it is what the plan is for."""


def scores_from_report(report: PlanReport) -> dict[str, tuple[float, float]]:
    """Criterion scores ``(score, max)`` from a report.

    A plan that cannot be executed (a line that does not parse, or an illegal step) achieves nothing:
    it earns neither ``constraints`` nor ``goal_coverage``. An executable plan earns ``goal_coverage``
    for the goal atoms it achieves (``PlanReport.progress``: atoms already true in the initial state
    earn nothing, atoms it breaks cost one each), and ``constraints`` when it breaks no extra constraint
    *and* achieves some of the goal (doing nothing, or shuffling blocks, keeps every constraint without
    doing the task). ``plan_format`` is 1 when every line parses and the plan is not empty.

    So unknown action names, comments or prose lines, and empty plans earn nothing but what parses;
    duplicated plans are simulated as written (a repeated move is usually illegal).
    """
    well_formed = report.parsed_steps > 0 and not report.format_errors
    executable = well_formed and report.illegal_step is None
    coverage = report.progress if executable else 0.0
    kept = executable and not report.constraint_violations and coverage > 0
    return {
        "constraints": (float(kept), CRITERIA["constraints"]),
        "goal_coverage": (coverage * CRITERIA["goal_coverage"], CRITERIA["goal_coverage"]),
        "plan_format": (float(well_formed), CRITERIA["plan_format"]),
    }


def artifact_scores(payload: dict[str, Any], plan_text: str) -> dict[str, tuple[float, float]]:
    """Per-criterion ``(score, max)``; see ``scores_from_report`` for how credit is given."""
    return scores_from_report(validate(payload, plan_text))


class SearchLimitError(RuntimeError):
    """The search gave up before proving a plan optimal or the problem unsolvable."""


def astar(
    start: Hashable,
    successors: Callable[[Any], Iterator[tuple[str, Any]]],
    heuristic: Callable[[Any], int],
    is_goal: Callable[[Any], bool],
    bound: int | None = None,
    max_expansions: int = 200_000,
) -> tuple[str, ...] | None:
    """Shortest action sequence to a goal state (None if none within ``bound``).

    The heuristic must be admissible; states are re-opened when reached more cheaply, so optimality does
    not depend on consistency. Ties are broken by depth then insertion order, which keeps the result
    deterministic for a deterministic successor order.
    """
    counter = 0
    best = {start: 0}
    parent: dict[Any, tuple[Any, str] | None] = {start: None}
    frontier: list[tuple[int, int, int, Any]] = [(heuristic(start), 0, 0, start)]
    expansions = 0
    while frontier:
        _, neg_g, _, state = heapq.heappop(frontier)
        g = -neg_g
        if g > best[state]:
            continue
        if is_goal(state):
            plan: list[str] = []
            link = parent[state]
            while link is not None:
                state, action = link
                plan.append(action)
                link = parent[state]
            return tuple(reversed(plan))
        expansions += 1
        if expansions > max_expansions:
            raise SearchLimitError(f"no plan proved optimal within {max_expansions} expansions")
        for action, nxt in successors(state):
            ng = g + 1
            if ng < best.get(nxt, ng + 1):
                h = heuristic(nxt)
                if bound is not None and ng + h > bound:
                    continue
                best[nxt] = ng
                parent[nxt] = (state, action)
                counter += 1
                heapq.heappush(frontier, (ng + h, -ng, counter, nxt))
    return None


def solve(
    kind: str,
    problem: dict[str, Any],
    constraints: Sequence[dict[str, Any]] = (),
    *,
    goal: Sequence[tuple[str, str]] | None = None,
    max_expansions: int = 200_000,
) -> tuple[str, ...] | None:
    """An optimal plan honouring every constraint (``max_steps`` as a depth bound), or None.

    ``goal`` replaces the problem's goal as ``(object, target)`` pairs, to plan for a different goal.
    """
    world = make_world(kind, problem, constraints)
    bounds = [spec["n"] for spec in constraints if spec["kind"] == "max_steps"]
    start, successors, heuristic, is_goal = world.search_space(goal)
    return astar(start, successors, heuristic, is_goal, min(bounds) if bounds else None, max_expansions)


def check_payload(payload: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the fault if a planning payload is inconsistent."""
    expected = {"kind", "problem", "constraints", "reference", "pool"}
    if set(payload) != expected:
        raise ValueError(f"payload keys {sorted(payload)} != {sorted(expected)}")
    kind = payload["kind"]
    if kind not in KINDS:
        raise ValueError(f"unknown planning kind {kind!r}")
    for spec in payload["constraints"]:
        args = CONSTRAINT_ARGS[kind].get(spec.get("kind"))
        if args is None or set(spec) != {"kind", *args}:
            raise ValueError(f"bad {kind} constraint spec {spec!r}")
    try:
        world = make_world(kind, payload["problem"], payload["constraints"])
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"malformed {kind} problem: {exc!r}") from None
    for kind_name, names in world.objects.items():
        for name in sorted(names):
            if not _NAME_RE.match(name):
                raise ValueError(f"{kind_name} name {name!r} must be lower-case letters, digits, '_' or '-'")
    # The other arguments name a block (blocks: block, onto, first, second) or a package (logistics).
    arg_types = {"truck": "truck", "location": "location"}
    member = "block" if kind == "blocks" else "package"
    for spec in payload["constraints"]:
        for arg in CONSTRAINT_ARGS[kind][spec["kind"]]:
            value = spec[arg]
            if arg in ("k", "n"):
                if not isinstance(value, int) or value < 1:
                    raise ValueError(f"{constraint_label(spec)}: {arg} must be a positive integer")
            elif value not in world.objects[arg_types.get(arg, member)]:
                raise ValueError(f"{constraint_label(spec)}: unknown {arg_types.get(arg, member)} {value!r}")
    report = validate_world(world, payload["reference"])
    if not report.valid:
        raise ValueError(f"reference plan is not valid: {'; '.join(report.issues)}")
    for item in payload["pool"]:
        if set(item) != {"flaw", "source"}:
            raise ValueError(f"bad pool entry {item!r}")
