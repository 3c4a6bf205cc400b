"""Deterministic generator for ``planning-v0.jsonl``: 100 blocks-world and logistics planning tasks.

Each task comes from a template family (problem structure + the kinds of extra constraint it carries).
Families have disjoint block and city names, and the train/eval split keeps families whole, so eval
problems differ from training ones in both shape and vocabulary. Constraints are drawn from the
unconstrained optimal plan where possible, so that they actually change what a correct plan looks like;
hard tasks are only accepted when every constraint-free shortest plan breaks a constraint.

The flawed pool imitates what a frozen LLM gets wrong: every variant is checked against the validator
and kept only if it fails in the way its label says.
"""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from harness_gym.core.task import write_generated
from harness_gym.domains.generation import Reject, family_records, flawed_pool, task_file
from harness_gym.domains.planning.world import (
    TABLE,
    BlocksWorld,
    LogisticsWorld,
    PlanReport,
    constraint_label,
    make_world,
    parse_plan,
    solve,
    validate_world,
)

OUTPUT = task_file("planning")
FLAWS = ("illegal_move", "missing_steps", "constraint_violation", "malformed", "wrong_goal")
MAX_ATTEMPTS = 80
CONSTRAINT_DRAWS = 6


@dataclass(frozen=True)
class Family:
    """A template family: problem structure plus the extra-constraint kinds every task in it carries."""

    difficulty: str
    kind: str
    structure: str
    constraints: tuple[str, ...]
    count: int

    @property
    def template(self) -> str:
        return f"{self.kind}/{self.structure}/{'+'.join(self.constraints) or 'plain'}"


def _families() -> tuple[Family, ...]:
    easy = [
        ("blocks", "tower-reverse", ()),
        ("blocks", "tower-split", ("never_on",)),
        ("blocks", "tower-merge", ("fixed",)),
        ("blocks", "shuffle", ("before",)),
        ("blocks", "partial", ("max_steps",)),
        ("blocks", "sussman", ("max_table",)),
        ("logistics", "line", ()),
        ("logistics", "ring", ("avoid",)),
        ("logistics", "line", ("deliver_before",)),
        ("logistics", "hub", ("capacity",)),
    ]
    standard = [
        ("blocks", "tower-reverse", ("never_on",)),
        ("blocks", "tower-merge", ("before",)),
        ("blocks", "tower-split", ("max_table",)),
        ("blocks", "shuffle", ("fixed",)),
        ("blocks", "shuffle", ("never_on", "max_steps")),
        ("blocks", "partial", ("before", "fixed")),
        ("blocks", "base-swap", ("max_table",)),
        ("blocks", "tower-merge", ("never_on", "fixed")),
        ("logistics", "two-city", ("avoid",)),
        ("logistics", "two-city", ("capacity",)),
        ("logistics", "ring", ("max_steps",)),
        ("logistics", "hub", ("deliver_before",)),
        ("logistics", "two-city", ("avoid", "deliver_before")),
        ("logistics", "line", ("capacity", "max_steps")),
        ("logistics", "relay", ("avoid",)),
    ]
    hard = [
        ("blocks", "shuffle", ("never_on", "before", "max_table")),
        ("blocks", "tower-split", ("never_on", "max_table", "max_steps")),
        ("blocks", "tower-merge", ("never_on", "before", "max_steps")),
        ("blocks", "base-swap", ("fixed", "before", "max_steps")),
        ("blocks", "partial", ("before", "max_table", "never_on")),
        ("logistics", "relay", ("avoid", "capacity")),
        ("logistics", "three-city", ("deliver_before", "avoid", "max_steps")),
        ("logistics", "ring", ("capacity", "deliver_before")),
        ("logistics", "hub", ("avoid", "deliver_before")),
        ("logistics", "two-city", ("capacity", "avoid", "max_steps")),
    ]
    out = [Family("easy", *spec, 2) for spec in easy]
    out += [Family("standard", *spec, 4) for spec in standard]
    out += [Family("hard", *spec, 2) for spec in hard]
    return tuple(out)


FAMILIES = _families()

# One disjoint name set per blocks family, one disjoint trio of cities per logistics family.
BLOCK_THEMES: tuple[tuple[str, ...], ...] = (
    ("red", "blue", "green", "yellow", "orange", "purple", "white"),
    ("apple", "pear", "plum", "cherry", "grape", "lemon", "mango"),
    ("fox", "wolf", "bear", "deer", "hare", "lynx", "otter"),
    ("ruby", "opal", "jade", "topaz", "pearl", "onyx", "amber"),
    ("oak", "elm", "ash", "birch", "pine", "maple", "cedar"),
    ("crow", "owl", "hawk", "wren", "swan", "dove", "finch"),
    ("cod", "carp", "pike", "trout", "perch", "bass", "eel"),
    ("mars", "venus", "pluto", "saturn", "jupiter", "neptune", "mercury"),
    ("iron", "tin", "zinc", "lead", "copper", "nickel", "cobalt"),
    ("rose", "lily", "iris", "tulip", "daisy", "poppy", "violet"),
    ("harp", "drum", "flute", "oboe", "lute", "horn", "cello"),
    ("sage", "mint", "basil", "thyme", "dill", "clove", "anise"),
    ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta"),
    ("bravo", "charlie", "echo", "foxtrot", "golf", "hotel", "kilo"),
    ("rain", "snow", "hail", "fog", "mist", "frost", "storm"),
    ("kale", "leek", "pea", "bean", "corn", "beet", "okra"),
    ("cube", "cone", "disk", "prism", "orb", "wedge", "pyramid"),
    ("granite", "basalt", "slate", "marble", "quartz", "flint", "chalk"),
    ("silk", "wool", "linen", "denim", "felt", "tweed", "satin"),
)
CITIES: tuple[str, ...] = (
    "oslo", "bergen", "lyon", "porto", "turin", "ghent", "bonn", "graz", "cork", "malmo", "tartu", "riga",
    "kaunas", "brno", "pecs", "varna", "kotor", "bari", "nice", "leeds", "york", "bath", "derby", "lille",
    "nantes", "basel", "bern", "linz", "ulm", "kiel", "trier", "aarhus", "odense", "turku", "espoo",
    "gdansk", "poznan", "krakow", "zadar", "mostar", "ohrid", "sibiu", "cluj", "plovdiv", "patras", "faro",
    "braga", "bilbao",
)  # fmt: skip
PLAN_FORMAT = (
    "Plan format: write only the plan, one action per line, each exactly in the form {example}. "
    "Do not number the steps and do not add any other text. Blank lines are ignored and names are "
    "case-insensitive."
)
SITES = ("depot", "port", "market", "mill", "yard", "station")

BLOCK_SIZES = {"easy": (3, 4), "standard": (4, 6), "hard": (6, 7)}
MIN_LENGTH = {"easy": 2, "standard": 4, "hard": 6}


@cache
def _name_sets() -> dict[str, tuple[str, ...]]:
    """Each family's block or city names (disjoint between families)."""
    out: dict[str, tuple[str, ...]] = {}
    blocks = logistics = 0
    for family in FAMILIES:
        if family.kind == "blocks":
            out[family.template] = BLOCK_THEMES[blocks]
            blocks += 1
        else:
            out[family.template] = CITIES[3 * logistics : 3 * logistics + 3]
            logistics += 1
    return out


# --------------------------------------------------------------------------------------------------
# Problems


def _partition(items: Sequence[str], rng: random.Random, stacks: int) -> list[list[str]]:
    items = list(items)
    rng.shuffle(items)
    cuts = sorted(rng.sample(range(1, len(items)), stacks - 1)) if stacks > 1 else []
    bounds = [0, *cuts, len(items)]
    return [items[a:b] for a, b in itertools.pairwise(bounds)]


def _stack_goal(stacks: Sequence[Sequence[str]]) -> list[list[str]]:
    goal = []
    for stack in stacks:
        below = TABLE
        for block in stack:
            goal.append(["on", block, below])
            below = block
    return goal


def blocks_problem(
    structure: str, names: Sequence[str], difficulty: str, rng: random.Random
) -> dict[str, Any]:
    low, high = BLOCK_SIZES[difficulty]
    n = 3 if structure == "sussman" else rng.randint(low, high)
    if structure == "sussman" and difficulty != "easy":
        raise ValueError("sussman is an easy structure")
    chosen = rng.sample(list(names), n + (rng.randint(0, 1) if structure == "sussman" else 0))
    blocks = sorted(chosen, key=names.index)
    if structure == "tower-reverse":
        extra = 0 if n <= 4 else 1
        tower = chosen[: n - extra]
        init = [tower] + ([chosen[n - extra :]] if extra else [])
        goal = _stack_goal([tower[::-1]])
    elif structure == "tower-split":
        init = [chosen]
        goal = _stack_goal(_partition(chosen, rng, rng.randint(2, 3)))
    elif structure == "tower-merge":
        init = _partition(chosen, rng, rng.randint(2, 3))
        order = chosen[:]
        rng.shuffle(order)
        goal = _stack_goal([order])
    elif structure == "shuffle":
        init = _partition(chosen, rng, rng.randint(1, 3))
        goal = _stack_goal(_partition(chosen, rng, rng.randint(1, 3)))
    elif structure == "partial":
        init = _partition(chosen, rng, rng.randint(1, 3))
        true_now = {tuple(atom) for atom in _stack_goal(init)}
        target = [atom for atom in _stack_goal(_partition(chosen, rng, 2)) if tuple(atom) not in true_now]
        on_blocks = [atom for atom in target if atom[2] != TABLE]
        if len(on_blocks) < 2:
            raise Reject("partial goal too small")
        goal = sorted(rng.sample(on_blocks, min(len(on_blocks), rng.randint(2, 3))))
    elif structure == "sussman":
        a, b, c = chosen[:3]
        init = [[a, c], [b]]
        if len(chosen) == 4:
            init[rng.randint(0, 1)].append(chosen[3])
        goal = _stack_goal([[c, b, a]])
    elif structure == "base-swap":
        stacks = _partition(chosen, rng, rng.randint(2, 3))
        stacks.sort(key=len, reverse=True)
        if len(stacks[0]) < 3:
            raise Reject("no tower to rebase")
        init = stacks
        other = rng.randrange(1, len(stacks))
        position = rng.randrange(len(stacks[other]))
        swapped = [list(stack) for stack in stacks]
        swapped[0][0], swapped[other][position] = swapped[other][position], swapped[0][0]
        goal = _stack_goal(swapped)
    else:
        raise ValueError(f"unknown blocks structure {structure!r}")
    return {"blocks": blocks, "stacks": [list(s) for s in init], "goal": goal}


def logistics_problem(
    structure: str, cities: Sequence[str], difficulty: str, rng: random.Random
) -> dict[str, Any]:
    roads: list[tuple[str, str]] = []
    layout: dict[str, list[str]] = {}

    def city(name: str, size: int, shape: str) -> list[str]:
        locs = [f"{name}-{site}" for site in SITES[:size]]
        layout[name] = locs
        if shape == "line":
            roads.extend(itertools.pairwise(locs))
        elif shape == "ring":
            roads.extend(zip(locs, locs[1:] + locs[:1], strict=False))
        else:
            roads.extend((locs[0], loc) for loc in locs[1:])
        return locs

    big = difficulty != "easy"
    if structure == "line":
        city(cities[0], rng.randint(4, 5) if big else rng.randint(3, 4), "line")
    elif structure == "ring":
        city(cities[0], rng.randint(5, 6) if big else rng.randint(4, 5), "ring")
    elif structure == "hub":
        city(cities[0], rng.randint(5, 6) if big else 4, "star")
    elif structure in ("two-city", "relay"):
        a = city(cities[0], rng.randint(2, 3), "star")
        b = city(cities[1], rng.randint(2, 3), "star")
        roads.append((a[0], b[0]))
    elif structure == "three-city":
        hubs = [city(name, rng.randint(2, 3) if i != 1 else 2, "star")[0] for i, name in enumerate(cities)]
        roads.extend(itertools.pairwise(hubs))
    else:
        raise ValueError(f"unknown logistics structure {structure!r}")
    locations = [loc for locs in layout.values() for loc in locs]
    if difficulty == "hard" or structure == "relay":
        n_trucks = 2
    elif difficulty == "standard" and structure == "two-city":
        n_trucks = rng.randint(1, 2)
    else:
        n_trucks = 1
    n_packages = {"easy": 2, "standard": rng.randint(2, 3), "hard": rng.randint(3, 4)}[difficulty]
    trucks = [f"t{i + 1}" for i in range(n_trucks)]
    if structure == "relay":
        starts = [rng.choice(layout[cities[0]]), rng.choice(layout[cities[1]])]
    else:
        starts = [rng.choice(locations) for _ in trucks]
    packages = [f"p{i + 1}" for i in range(n_packages)]
    origin = [rng.choice(locations) for _ in packages]
    goal = []
    for p, here in zip(packages, origin, strict=True):
        goal.append(["at", p, rng.choice([loc for loc in locations if loc != here])])
    return {
        "cities": layout,
        "roads": sorted([sorted(road) for road in roads]),
        "trucks": dict(zip(trucks, starts, strict=True)),
        "capacity": {t: rng.randint(2, 3) for t in trucks},
        "packages": dict(zip(packages, origin, strict=True)),
        "goal": goal,
    }


# --------------------------------------------------------------------------------------------------
# Constraints


def _steps(world: BlocksWorld | LogisticsWorld, plan: Sequence[str]):
    steps, errors = parse_plan("\n".join(plan), world.signatures, world.objects)
    assert not errors, errors
    return steps


def _blocks_trace(world: BlocksWorld, plan: Sequence[str]) -> list[dict[str, str]]:
    """State before each step, then the final state."""
    steps = _steps(world, plan)
    return [world.run(steps[:i]).state for i in range(len(steps) + 1)]


def _blocks_constraints(
    kinds: Sequence[str], problem: dict[str, Any], plan: Sequence[str], rng: random.Random
) -> list[dict[str, Any]]:
    world = BlocksWorld(problem, [])
    steps = _steps(world, plan)
    moves = [step.args for step in steps]
    goal = {tuple(atom[1:]) for atom in problem["goal"]}
    blocks = problem["blocks"]
    order: list[str] = []
    for x, _ in moves:
        if x not in order:
            order.append(x)
    out: list[dict[str, Any]] = []
    used: set[str] = set()
    for kind in kinds:
        if kind == "never_on":
            biting = sorted({(x, y) for x, y in moves if y != TABLE and (x, y) not in goal})
            pairs = biting or [(x, y) for x in blocks for y in blocks if x != y and (x, y) not in goal]
            x, y = rng.choice(pairs)
            out.append({"kind": "never_on", "block": x, "onto": y})
        elif kind == "fixed":
            needed = world.must_move()
            biting = [b for b in order if b not in needed and b not in used]
            idle = [b for b in blocks if b not in order and b not in used]
            choice = rng.choice(biting or idle or [""])
            if not choice:
                raise Reject("no block can be fixed")
            used.add(choice)
            out.append({"kind": "fixed", "block": choice})
        elif kind == "before":
            # b is first moved before a in the plan, so before(a, b) rules that plan out.
            biting = [(a, b) for i, b in enumerate(order) for a in order[i + 1 :]]
            if not biting:
                raise Reject("too few moved blocks for before()")
            a, b = rng.choice(biting)
            out.append({"kind": "before", "first": a, "second": b})
        elif kind == "max_table":
            trace = _blocks_trace(world, plan)
            peak = max(sum(1 for v in state.values() if v == TABLE) for state in trace)
            floor = max(len(problem["stacks"]), 1)
            out.append({"kind": "max_table", "k": max(floor, peak - 1)})
        elif kind != "max_steps":
            raise ValueError(f"unknown blocks constraint {kind!r}")
    return out


def _logistics_constraints(
    kinds: Sequence[str], problem: dict[str, Any], plan: Sequence[str], rng: random.Random
) -> list[dict[str, Any]]:
    world = LogisticsWorld(problem, [])
    steps = _steps(world, plan)
    trucks = list(problem["trucks"])
    dest = {atom[1]: atom[2] for atom in problem["goal"]}
    entered = sorted({(s.args[0], s.args[2]) for s in steps if s.name == "drive"})
    load = dict.fromkeys(trucks, 0)
    peak = dict.fromkeys(trucks, 0)
    delivered: list[str] = []
    for s in steps:
        if s.name == "load":
            load[s.args[1]] += 1
            peak[s.args[1]] = max(peak[s.args[1]], load[s.args[1]])
        elif s.name == "unload":
            load[s.args[1]] -= 1
            if dest.get(s.args[0]) == s.args[2] and s.args[0] not in delivered:
                delivered.append(s.args[0])
    out: list[dict[str, Any]] = []
    for kind in kinds:
        if kind == "avoid":
            biting = [(t, loc) for t, loc in entered if loc != problem["trucks"][t]]
            locations = [loc for locs in problem["cities"].values() for loc in locs]
            calm = [(t, loc) for t in trucks for loc in locations if (t, loc) not in entered]
            calm = [(t, loc) for t, loc in calm if loc != problem["trucks"][t]]
            t, loc = rng.choice(biting or calm)
            out.append({"kind": "avoid", "truck": t, "location": loc})
        elif kind == "capacity":
            biting = [t for t in trucks if peak[t] >= 2]
            t = rng.choice(biting or trucks)
            out.append({"kind": "capacity", "truck": t, "k": max(1, peak[t] - 1)})
        elif kind == "deliver_before":
            biting = [(a, b) for i, b in enumerate(delivered) for a in delivered[i + 1 :]]
            if not biting:
                raise Reject("too few deliveries for deliver_before()")
            a, b = rng.choice(biting)
            out.append({"kind": "deliver_before", "first": a, "second": b})
        elif kind != "max_steps":
            raise ValueError(f"unknown logistics constraint {kind!r}")
    return out


# --------------------------------------------------------------------------------------------------
# Prompts


def _blocks_prompt(problem: dict[str, Any], constraints: Sequence[dict[str, Any]]) -> str:
    lines = [
        "Solve this blocks-world planning problem.",
        "",
        f"Blocks: {', '.join(problem['blocks'])}.",
        "",
        "Initial state (each stack listed from the table upwards):",
    ]
    for stack in problem["stacks"]:
        if len(stack) == 1:
            lines.append(f"- {stack[0]} stands alone on the table")
        else:
            parts = [f"{stack[0]} on the table"] + [f"{b} on {a}" for a, b in itertools.pairwise(stack)]
            lines.append("- " + ", ".join(parts))
    clear = [stack[-1] for stack in problem["stacks"]]
    lines.append(f"Clear blocks (nothing on them): {', '.join(clear)}.")
    lines += ["", "Goal (all of these must hold at the end):"]
    for _, x, y in problem["goal"]:
        lines.append(f"- {x} is on the table" if y == TABLE else f"- {x} is on {y}")
    mentioned = {atom[1] for atom in problem["goal"]} | {atom[2] for atom in problem["goal"]}
    if any(b not in mentioned for b in problem["blocks"]):
        lines.append("Blocks the goal does not mention may end anywhere.")
    lines += [
        "",
        "Action: move(X, Y) moves block X onto Y, where Y is another block or the word table.",
        "- X must be clear (no block on it).",
        "- Y must be clear, unless Y is the table (the table always has room unless a constraint says "
        "otherwise).",
        "- X and Y must differ, and a block already on the table cannot be moved onto the table.",
    ]
    return _prompt(lines, constraints, "move(X, Y) with real block names, or move(X, table)")


def _logistics_prompt(problem: dict[str, Any], constraints: Sequence[dict[str, Any]]) -> str:
    lines = ["Solve this logistics planning problem.", "", "Cities and their locations:"]
    for name, locs in problem["cities"].items():
        lines.append(f"- {name}: {', '.join(locs)}")
    lines.append("Roads (each can be driven in both directions; there are no others):")
    lines += [f"- {a} <-> {b}" for a, b in problem["roads"]]
    lines += ["", "Trucks:"]
    for t, loc in problem["trucks"].items():
        lines.append(f"- {t} is at {loc} and can carry {problem['capacity'][t]} packages at once")
    lines.append("Packages (all start on the ground, not in a truck):")
    lines += [f"- {p} is at {loc}" for p, loc in problem["packages"].items()]
    lines += ["", "Goal (all of these must hold at the end):"]
    lines += [f"- {p} has been unloaded at {loc}" for _, p, loc in problem["goal"]]
    lines.append("Trucks may end anywhere.")
    lines += [
        "",
        "Actions:",
        "- drive(T, FROM, TO): truck T drives along a road from FROM to TO; T must be at FROM.",
        "- load(P, T, L): put package P into truck T at location L; P and T must both be at L and T must "
        "have room.",
        "- unload(P, T, L): take package P out of truck T at location L; P must be in T and T must be at L.",
        "A package only counts as being at a location once it has been unloaded there.",
    ]
    return _prompt(lines, constraints, "drive(T, FROM, TO), load(P, T, L) or unload(P, T, L) with real names")


def _prompt(lines: list[str], constraints: Sequence[dict[str, Any]], example: str) -> str:
    """A problem's description, then its extra constraints and the plan format (with an example)."""
    return "\n".join([*lines, *_constraint_lines(constraints), "", PLAN_FORMAT.format(example=example)])


_CONSTRAINT_TEXT = {
    "never_on": "{block} may never be placed directly on {onto}",
    "fixed": "{block} must never be moved",
    "before": "{second} may not be moved until {first} has been moved at least once",
    "max_table": "at no time may more than {k} stacks stand on the table",
    "max_steps": "the plan may have at most {n} actions",
    "avoid": "truck {truck} must never enter {location}",
    "capacity": "truck {truck} may carry at most {k} package(s) at any time",
    "deliver_before": (
        "{second} may not be unloaded at its goal location until {first} has been unloaded at its own goal "
        "location"
    ),
}
"""How a prompt states each kind of extra constraint (``{field}``: the constraint's own fields)."""


def _constraint_lines(constraints: Sequence[dict[str, Any]]) -> list[str]:
    if not constraints:
        return []
    lines = ["", "Extra constraints (a plan that breaks any of them is wrong):"]
    for spec in constraints:
        if spec["kind"] not in _CONSTRAINT_TEXT:
            raise ValueError(f"unknown constraint kind {spec['kind']!r}")
        lines.append(f"- {constraint_label(spec)}: {_CONSTRAINT_TEXT[spec['kind']].format(**spec)}")
    return lines


# --------------------------------------------------------------------------------------------------
# Flawed pool


def _matches(flaw: str, report: PlanReport) -> bool:
    """Whether a report shows the failure a flaw label promises (and the plan is rejected)."""
    if report.valid:
        return False
    if flaw == "malformed":
        return bool(report.format_errors)
    if report.format_errors or report.parsed_steps == 0:
        return False
    if flaw == "illegal_move":
        return report.illegal_step is not None
    if flaw == "missing_steps":
        return report.illegal_step is not None or report.goals_met < report.goals_total
    if flaw == "constraint_violation":
        return (
            report.illegal_step is None
            and bool(report.constraint_violations)
            and report.goals_met == report.goals_total
        )
    if flaw == "wrong_goal":
        return (
            report.illegal_step is None
            and not report.constraint_violations
            and report.goals_met < report.goals_total
        )
    raise ValueError(f"unknown flaw {flaw!r}")


def _missing_candidates(plan: list[str], rng: random.Random) -> list[list[str]]:
    n = len(plan)
    out = [plan[:-1], plan[1:], plan[: n - 2]]
    middle = rng.randrange(1, n - 1) if n > 2 else 0
    out.append(plan[:middle] + plan[middle + 1 :])
    if n > 4:
        cut = rng.randrange(1, n - 2)
        out.append(plan[:cut] + plan[cut + 2 :])
    return out


def _swap_candidates(plan: list[str]) -> list[list[str]]:
    out = []
    for i in range(len(plan) - 1):
        swapped = plan[:]
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
        out.append(swapped)
    return out


def _blocks_illegal(world: BlocksWorld, plan: list[str], rng: random.Random) -> list[list[str]]:
    trace = _blocks_trace(world, plan)
    moves = [step.args for step in _steps(world, plan)]
    out = _swap_candidates(plan)
    for i, state in enumerate(trace[:-1]):
        covered = sorted(b for b in state.values() if b != TABLE)
        clear = [b for b in world.blocks if b not in covered]
        if covered:
            x = rng.choice(covered)
            dest = rng.choice([b for b in clear if b != x] + [TABLE])
            if not (dest == TABLE and state[x] == TABLE):
                out.append([*plan[:i], world.action_text(x, dest), *plan[i:]])
            x = moves[i][0]
            blocked = [b for b in covered if b != x]
            if blocked:
                out.append([*plan[:i], world.action_text(x, rng.choice(blocked)), *plan[i + 1 :]])
    return out


def _logistics_illegal(world: LogisticsWorld, plan: list[str], rng: random.Random) -> list[list[str]]:
    steps = _steps(world, plan)
    out = _swap_candidates(plan)
    for i, (a, b) in enumerate(itertools.pairwise(steps)):
        same_truck = a.name == b.name == "drive" and a.args[0] == b.args[0]
        if same_truck and a.args[1] != b.args[2] and b.args[2] not in world.roads[a.args[1]]:
            merged = world.action_text("drive", a.args[0], a.args[1], b.args[2])
            out.append([*plan[:i], merged, *plan[i + 2 :]])
    for i, step in enumerate(steps):
        if step.name == "load" and len(world.trucks) > 1:
            other = rng.choice([t for t in world.trucks if t != step.args[1]])
            out.append(
                [*plan[:i], world.action_text("load", step.args[0], other, step.args[2]), *plan[i + 1 :]]
            )
        if step.name == "drive":
            wrong = rng.choice([loc for loc in world.locations if loc != step.args[1]])
            out.append(
                [*plan[:i], world.action_text("drive", step.args[0], wrong, step.args[2]), *plan[i + 1 :]]
            )
    return out


def _padding(world: BlocksWorld | LogisticsWorld, plan: list[str]) -> list[list[str]]:
    """Legal detours appended after the plan: they keep the goal but lengthen the plan."""
    out = []
    if isinstance(world, BlocksWorld):
        final = _blocks_trace(world, plan)[-1]
        covered = {b for b in final.values() if b != TABLE}
        for x in world.blocks:
            if x in covered:
                continue
            if final[x] != TABLE:
                out.append([*plan, world.action_text(x, TABLE), world.action_text(x, final[x])])
            else:
                for y in world.blocks:
                    if y != x and y not in covered:
                        out.append([*plan, world.action_text(x, y), world.action_text(x, TABLE)])
                        break
    else:
        truck_at = world.run(_steps(world, plan)).state[0]
        for t in world.trucks:
            for there in sorted(world.roads[truck_at[t]]):
                here = truck_at[t]
                out.append(
                    [
                        *plan,
                        world.action_text("drive", t, here, there),
                        world.action_text("drive", t, there, here),
                    ]
                )
    return out


def _violation_candidates(
    kind: str, problem: dict[str, Any], constraints: list[dict[str, Any]], free_plan: Sequence[str]
) -> list[list[str]]:
    out = [list(free_plan)]
    for i, spec in enumerate(constraints):
        if spec["kind"] == "max_steps":
            continue
        rest = constraints[:i] + constraints[i + 1 :]
        plan = solve(kind, problem, rest)
        if plan is not None:
            out.append(list(plan))
    return out


def _wrong_goals(kind: str, problem: dict[str, Any], rng: random.Random) -> list[list[tuple[str, str]]]:
    goal = [(atom[1], atom[2]) for atom in problem["goal"]]
    out = []
    if kind == "blocks":
        named = sorted({x for x, _ in goal} | {y for _, y in goal if y != TABLE}, key=problem["blocks"].index)
        pairs = [(a, b) for i, a in enumerate(named) for b in named[i + 1 :]]
        rng.shuffle(pairs)
        for a, b in pairs[:3]:
            swap = {a: b, b: a}
            out.append([(swap.get(x, x), swap.get(y, y)) for x, y in goal])
    else:
        if len(goal) >= 2:
            (p, lp), (q, lq) = rng.sample(goal, 2)
            if lp != lq:
                out.append([(x, lq if x == p else lp if x == q else loc) for x, loc in goal])
        world = LogisticsWorld(problem, [])
        for p, loc in goal:
            near = sorted(world.roads[loc] - {problem["packages"][p]})
            if near:
                out.append([(x, rng.choice(near) if x == p else g) for x, g in goal])
    return out


def _malformed(
    kind: str, plan: list[str], world: BlocksWorld | LogisticsWorld, rng: random.Random
) -> list[list[str]]:
    steps = _steps(world, plan)
    n = len(plan)
    i = rng.randrange(n)
    step = steps[i]
    out: list[list[str]] = [
        [f"{k}. {line}" for k, line in enumerate(plan, start=1)],
        [f"Step {k}: {line}" for k, line in enumerate(plan, start=1)],
        ["Here is a plan that reaches the goal:", "", *plan, "", "This satisfies every goal."],
        [f"({s.name} {' '.join(s.args)})" for s in steps],
        [*plan[:i], f"{step.name}({', '.join(step.args[:-1])})", *plan[i + 1 :]],
    ]
    if n >= 2:
        j = min(i, n - 2)
        out.append([*plan[:j], f"{plan[j]}, {plan[j + 1]}", *plan[j + 2 :]])
    if kind == "blocks":
        x, y = step.args
        out.append([*plan[:i], f"move {x} onto {'the table' if y == TABLE else y}", *plan[i + 1 :]])
        out.append([*plan[:i], f"move({x}, {'floor' if y == TABLE else 'block_' + y})", *plan[i + 1 :]])
        out.append([*plan[:i], f"stack({x}, {y})" if y != TABLE else f"unstack({x})", *plan[i + 1 :]])
    else:
        if step.name == "drive":
            t, a, b = step.args
            city = b.split("-")[0]
            out.append([*plan[:i], f"drive {t} from {a} to {b}", *plan[i + 1 :]])
            out.append([*plan[:i], f"drive({t}, {a}, {city})", *plan[i + 1 :]])
        else:
            p, t, loc = step.args
            out.append([*plan[:i], f"{step.name}(package{p[1:]}, {t}, {loc})", *plan[i + 1 :]])
            out.append(
                [*plan[:i], f"{'pickup' if step.name == 'load' else 'drop'}({p}, {t}, {loc})", *plan[i + 1 :]]
            )
    return out


def build_pool(
    kind: str,
    problem: dict[str, Any],
    constraints: list[dict[str, Any]],
    reference: list[str],
    free_plan: Sequence[str],
    rng: random.Random,
) -> list[dict[str, str]]:
    """Five to eight flawed variants of the reference, each verified to fail as labelled."""
    world = make_world(kind, problem, constraints)
    candidates: dict[str, list[list[str]]] = {
        "illegal_move": (
            _blocks_illegal(world, reference, rng)
            if isinstance(world, BlocksWorld)
            else _logistics_illegal(world, reference, rng)
        ),
        "missing_steps": _missing_candidates(reference, rng),
        "constraint_violation": (
            _violation_candidates(kind, problem, constraints, free_plan) + _padding(world, reference)
            if constraints
            else []
        ),
        "malformed": _malformed(kind, reference, world, rng),
        "wrong_goal": [],
    }
    for goal in _wrong_goals(kind, problem, rng):
        plan = solve(kind, problem, constraints, goal=goal)
        if plan is not None:
            candidates["wrong_goal"].append(list(plan))
    texts = {flaw: ["\n".join(lines) for lines in plans] for flaw, plans in candidates.items()}
    return flawed_pool(
        texts,
        FLAWS,
        "\n".join(reference),
        lambda flaw, text: _matches(flaw, validate_world(world, text)),
        rng,
    )


# --------------------------------------------------------------------------------------------------
# Tasks


def build_task(family: Family, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """One task (prompt, payload) for a family, or ``Reject`` if the draw misses the family's bar."""
    names = _name_sets()[family.template]
    if family.kind == "blocks":
        problem = blocks_problem(family.structure, names, family.difficulty, rng)
    else:
        problem = logistics_problem(family.structure, names, family.difficulty, rng)
    free = solve(family.kind, problem)
    if not free:
        raise Reject("goal already holds or cannot be reached")
    pick = _blocks_constraints if family.kind == "blocks" else _logistics_constraints
    for _ in range(CONSTRAINT_DRAWS):
        constraints = pick(family.constraints, problem, free, rng)
        plan = solve(family.kind, problem, constraints)
        if plan is not None and (family.difficulty != "hard" or len(plan) > len(free)):
            break
    else:
        raise Reject("no constraint draw keeps the problem solvable (and, if hard, lengthens its plan)")
    if len(plan) < MIN_LENGTH[family.difficulty]:
        raise Reject("plan too short for the difficulty")
    if "max_steps" in family.constraints:
        slack = 0 if family.difficulty == "hard" else rng.randint(0, 1)
        constraints.append({"kind": "max_steps", "n": len(plan) + slack})
    world = make_world(family.kind, problem, constraints)
    reference = list(plan)
    report = validate_world(world, "\n".join(reference))
    if not report.valid:
        raise AssertionError(f"search produced an invalid plan: {report.issues}")
    pool = build_pool(family.kind, problem, constraints, reference, free, rng)
    prompt = (_blocks_prompt if family.kind == "blocks" else _logistics_prompt)(problem, constraints)
    payload = {
        "kind": family.kind,
        "problem": problem,
        "constraints": constraints,
        "reference": "\n".join(reference),
        "pool": pool,
    }
    return prompt, payload


def generate_records() -> list[dict[str, Any]]:
    """All task records in id order, with splits assigned; deterministic for a given code version."""
    return family_records("planning", FAMILIES, build_task, MAX_ATTEMPTS)


def main(argv: Sequence[str] | None = None) -> int:
    return write_generated(generate_records, OUTPUT, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
