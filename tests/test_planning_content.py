"""Planning content: validator semantics, optimal search, and the shipped ``planning-v0`` task set."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from harness_gym.core.task import read_jsonl, write_jsonl
from harness_gym.domains.generation import POOL_MAX, POOL_MIN
from harness_gym.domains.planning import generate, world
from harness_gym.domains.planning.world import (
    MAX_PLAN_STEPS,
    SearchLimitError,
    artifact_scores,
    astar,
    check_payload,
    constraint_label,
    make_world,
    solve,
    validate,
)

FLAWS = {"illegal_move", "missing_steps", "constraint_violation", "malformed", "wrong_goal"}


def blocks(constraints: list[dict[str, Any]] | None = None, **problem: Any) -> dict[str, Any]:
    """b on a, c alone; goal: a on c, b on the table. Shortest plan: move(b, table), move(a, c)."""
    base = {
        "blocks": ["a", "b", "c"],
        "stacks": [["a", "b"], ["c"]],
        "goal": [["on", "a", "c"], ["on", "b", "table"]],
    }
    base.update(problem)
    return {"kind": "blocks", "problem": base, "constraints": constraints or [], "reference": "", "pool": []}


def logistics(constraints: list[dict[str, Any]] | None = None, capacity: int = 2) -> dict[str, Any]:
    """Road x-a - x-b - x-c - x-d; t1 at x-a; p1 at x-a and p2 at x-b, both to x-c."""
    problem = {
        "cities": {"x": ["x-a", "x-b", "x-c", "x-d"]},
        "roads": [["x-a", "x-b"], ["x-b", "x-c"], ["x-c", "x-d"]],
        "trucks": {"t1": "x-a"},
        "capacity": {"t1": capacity},
        "packages": {"p1": "x-a", "p2": "x-b"},
        "goal": [["at", "p1", "x-c"], ["at", "p2", "x-c"]],
    }
    return {
        "kind": "logistics",
        "problem": problem,
        "constraints": constraints or [],
        "reference": "",
        "pool": [],
    }


BLOCKS_PLAN = "move(b, table)\nmove(a, c)"
LOGISTICS_PLAN = "\n".join(
    [
        "load(p1, t1, x-a)",
        "drive(t1, x-a, x-b)",
        "load(p2, t1, x-b)",
        "drive(t1, x-b, x-c)",
        "unload(p1, t1, x-c)",
        "unload(p2, t1, x-c)",
    ]
)


def total(scores: dict[str, tuple[float, float]]) -> tuple[float, float]:
    return sum(s for s, _ in scores.values()), sum(m for _, m in scores.values())


# ---- preconditions ---------------------------------------------------------------------------------


def test_hand_plans_are_valid() -> None:
    for payload, plan in ((blocks(), BLOCKS_PLAN), (logistics(), LOGISTICS_PLAN)):
        report = validate(payload, plan)
        assert report.valid, report.issues
        assert report.issues == ()
        assert artifact_scores(payload, plan) == {
            "constraints": (1.0, 1.0),
            "goal_coverage": (2.0, 2.0),
            "plan_format": (1.0, 1.0),
        }


@pytest.mark.parametrize(
    ("plan", "step", "needle"),
    [
        ("move(a, c)", 1, "a is not clear (b is on a)"),
        ("move(c, a)", 1, "a is not clear (b is on a)"),
        ("move(c, c)", 1, "onto itself"),
        ("move(c, table)", 1, "c is already on the table"),
        ("move(b, c)\nmove(a, b)\nmove(a, c)", 3, "c is not clear (b is on c)"),
    ],
)
def test_blocks_preconditions_fire(plan: str, step: int, needle: str) -> None:
    report = validate(blocks(), plan)
    assert report.illegal_step == step
    assert needle in (report.illegal_reason or "")
    assert not report.valid and not report.format_errors
    assert any(f"step {step} (line {step})" in issue for issue in report.issues)


def test_blocks_legal_moves_do_not_fire() -> None:
    report = validate(blocks(), "move(b, c)\nmove(b, table)\nmove(c, b)\nmove(c, table)")
    assert report.illegal_step is None and report.illegal_reason is None
    assert report.goals_met == 1  # b on the table; a is not on c


def test_illegal_step_stops_execution() -> None:
    report = validate(blocks(), "move(a, c)\nmove(b, table)")
    assert report.illegal_step == 1 and report.unexecuted_steps == 1
    assert report.goals_met == 0  # measured in the state where execution stopped
    scores = artifact_scores(blocks(), "move(a, c)\nmove(b, table)")
    assert scores == {"constraints": (0.0, 1.0), "goal_coverage": (0.0, 2.0), "plan_format": (1.0, 1.0)}


@pytest.mark.parametrize(
    ("plan", "needle", "capacity"),
    [
        ("drive(t1, x-b, x-c)", "t1 is at x-a, not at x-b", 2),
        ("drive(t1, x-a, x-c)", "no road from x-a to x-c", 2),
        ("load(p2, t1, x-b)", "t1 is at x-a, not at x-b", 2),
        ("load(p2, t1, x-a)", "p2 is at x-b, not at x-a", 2),
        ("load(p1, t1, x-a)\nload(p1, t1, x-a)", "p1 is already in t1", 2),
        ("load(p1, t1, x-a)\ndrive(t1, x-a, x-b)\nload(p2, t1, x-b)", "t1 is full (capacity 1)", 1),
        ("unload(p1, t1, x-a)", "p1 is not in t1", 2),
        ("load(p1, t1, x-a)\ndrive(t1, x-a, x-b)\nunload(p1, t1, x-a)", "t1 is at x-b, not at x-a", 2),
    ],
)
def test_logistics_preconditions_fire(plan: str, needle: str, capacity: int) -> None:
    report = validate(logistics(capacity=capacity), plan)
    assert report.illegal_step == plan.count("\n") + 1
    assert needle in (report.illegal_reason or ""), report.illegal_reason


def test_logistics_capacity_precondition_does_not_fire_below_capacity() -> None:
    assert validate(logistics(capacity=2), LOGISTICS_PLAN).illegal_step is None


# ---- extra constraints -------------------------------------------------------------------------------


def spec(kind: str, **args: Any) -> dict[str, Any]:
    return {"kind": kind, **args}


@pytest.mark.parametrize(
    ("fires", "quiet", "needle"),
    [
        (spec("never_on", block="a", onto="c"), spec("never_on", block="b", onto="c"), "a directly on c"),
        (spec("fixed", block="b"), spec("fixed", block="c"), "moves b"),
        (spec("before", first="a", second="b"), spec("before", first="b", second="a"), "before a"),
        (spec("max_table", k=2), spec("max_table", k=3), "3 stacks"),
        (spec("max_steps", n=1), spec("max_steps", n=2), "2 steps"),
    ],
)
def test_blocks_constraints(fires: dict[str, Any], quiet: dict[str, Any], needle: str) -> None:
    report = validate(blocks([fires]), BLOCKS_PLAN)
    assert len(report.constraint_violations) == 1
    assert needle in report.constraint_violations[0], report.constraint_violations
    assert report.goals_met == report.goals_total and report.illegal_step is None and not report.valid
    assert artifact_scores(blocks([fires]), BLOCKS_PLAN)["constraints"] == (0.0, 1.0)
    assert artifact_scores(blocks([fires]), BLOCKS_PLAN)["goal_coverage"] == (2.0, 2.0)
    assert validate(blocks([quiet]), BLOCKS_PLAN).valid


def test_before_fires_when_first_never_moves() -> None:
    report = validate(blocks([{"kind": "before", "first": "c", "second": "b"}]), BLOCKS_PLAN)
    assert "step 1 (line 1) move(b, table)" in report.constraint_violations[0]


@pytest.mark.parametrize(
    ("fires", "quiet", "needle"),
    [
        (spec("avoid", truck="t1", location="x-b"), spec("avoid", truck="t1", location="x-d"), "into x-b"),
        (spec("capacity", truck="t1", k=1), spec("capacity", truck="t1", k=2), "2 packages"),
        (
            spec("deliver_before", first="p2", second="p1"),
            spec("deliver_before", first="p1", second="p2"),
            "delivers p1",
        ),
        (spec("max_steps", n=5), spec("max_steps", n=6), "6 steps"),
    ],
)
def test_logistics_constraints(fires: dict[str, Any], quiet: dict[str, Any], needle: str) -> None:
    report = validate(logistics([fires]), LOGISTICS_PLAN)
    assert len(report.constraint_violations) == 1
    assert needle in report.constraint_violations[0], report.constraint_violations
    assert report.goals_met == report.goals_total and report.illegal_step is None and not report.valid
    assert validate(logistics([quiet]), LOGISTICS_PLAN).valid


def test_constraint_score_needs_an_executable_plan_that_keeps_every_constraint() -> None:
    two = [{"kind": "fixed", "block": "b"}, {"kind": "max_steps", "n": 2}]
    assert artifact_scores(blocks(two), BLOCKS_PLAN)["constraints"] == (0.0, 1.0)
    assert artifact_scores(blocks(), "move(a, c)")["constraints"] == (0.0, 1.0)
    assert artifact_scores(blocks(), BLOCKS_PLAN)["constraints"] == (1.0, 1.0)


# ---- parser ------------------------------------------------------------------------------------------


def test_parser_tolerates_whitespace_case_and_blank_lines() -> None:
    text = "\n  MOVE( B ,Table )  \r\n\n\t\tMove(a,C)\n   \n"
    report = validate(blocks(), text)
    assert report.valid, report.issues
    assert report.parsed_steps == 2


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("1. move(b, table)", "cannot parse"),
        ("Step 1: move(b, table)", "cannot parse"),
        ("move b onto the table", "cannot parse"),
        ("(move b table)", "cannot parse"),
        ("move(b, table), move(a, c)", "exactly one action per line"),
        ("move(b)", "takes 2 arguments"),
        ("move(b, table, c)", "takes 2 arguments"),
        ("move(b, floor)", "unknown destination 'floor'"),
        ("move(table, c)", "unknown block 'table'"),
        ("stack(b, c)", "unknown action 'stack'"),
    ],
)
def test_parser_rejects_format_slips(line: str, needle: str) -> None:
    report = validate(blocks(), f"move(b, table)\n\n{line}\nmove(a, c)")
    assert len(report.format_errors) == 1
    assert report.format_errors[0].startswith("line 3:") and needle in report.format_errors[0]
    assert report.parsed_steps == 2 and report.goals_met == 2  # the slip is skipped, the rest runs
    assert not report.valid
    slipped = artifact_scores(blocks(), f"move(b, table)\n\n{line}\nmove(a, c)")
    assert all(score == 0.0 for score, _ in slipped.values())  # not executable: earns nothing


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("move(b, floor)", "line 1: unknown destination 'floor' (argument 2 of move)"),
        ("move(table, c)", "line 1: unknown block 'table' (argument 1 of move)"),
        ("move(b!, table)", "line 1: argument 1 of move is not a name: 'b!'"),
        ("move()", "line 1: move takes 2 arguments (block, destination), got 0"),
        ("move(b, table))", "line 1: write exactly one action per line, got 'move(b, table))'"),
        ("move((b, table)", "line 1: write exactly one action per line, got 'move((b, table)'"),
    ],
)
def test_parser_errors_name_the_argument_at_fault(line: str, error: str) -> None:
    """Arguments are counted from 1; an argument that is not a name at all is reported as such (not
    looked up); empty parentheses hold no argument; one stray bracket, opening or closing, is read as
    more than one action on the line."""
    assert validate(blocks(), line).format_errors == (error,)


def test_parser_lists_every_known_action_of_the_world() -> None:
    """An unknown action's message lists all the world's actions, comma-separated (logistics has three)."""
    assert validate(logistics(), "fly(t1)").format_errors == (
        "line 1: unknown action 'fly' (known actions: drive, load, unload)",
    )


def test_parser_steps_and_lines_are_reported_separately() -> None:
    report = validate(blocks(), "Plan:\n\nmove(b, table)\nmove(b, table)\nmove(a, c)")
    assert report.illegal_step == 2 and report.illegal_line == 4 and report.unexecuted_steps == 1
    assert any("step 2 (line 4) move(b, table)" in issue for issue in report.issues)


@pytest.mark.parametrize("text", ["", "\n   \n", "Here is the plan.\n1) move(b, table)"])
def test_empty_or_unparseable_plan_scores_zero(text: str) -> None:
    report = validate(blocks(), text)
    assert report.parsed_steps == 0 and not report.valid and report.issues
    assert all(score == 0.0 for score, _ in artifact_scores(blocks(), text).values())


def test_unmet_goal_is_described() -> None:
    report = validate(blocks(), "move(b, table)")
    assert report.goals_met == 1 and report.goals_total == 2
    assert "goal: on(a, c) not met: a is on the table" in report.issues
    assert artifact_scores(blocks(), "move(b, table)")["goal_coverage"] == (1.0, 2.0)


# ---- search -----------------------------------------------------------------------------------------


def _brute_force_length(payload: dict[str, Any], max_len: int) -> int | None:
    """Shortest valid plan length by enumerating action sequences, pruning those already illegal or
    violating a constraint (tiny instances only; independent of the A* code)."""
    names = payload["problem"]["blocks"]
    actions = [f"move({x}, {y})" for x in names for y in [*names, "table"] if x != y]
    frontier = [""]
    for length in range(1, max_len + 1):
        grown = []
        for prefix in frontier:
            for action in actions:
                plan = prefix + action
                report = validate(payload, plan)
                if report.valid:
                    return length
                if report.illegal_step is None and not report.constraint_violations:
                    grown.append(plan + "\n")
        frontier = grown
    return None


SUSSMAN = {
    "blocks": ["a", "b", "c"],
    "stacks": [["a", "c"], ["b"]],
    "goal": [["on", "a", "b"], ["on", "b", "c"]],
}


def test_search_finds_sussman_plan() -> None:
    plan = solve("blocks", SUSSMAN)
    assert plan == ("move(c, table)", "move(b, c)", "move(a, b)")


# a-b-c stacked, d alone; goal: a on d, c on b, b on the table (4 moves unconstrained).
FOUR = {
    "blocks": ["a", "b", "c", "d"],
    "stacks": [["a", "b", "c"], ["d"]],
    "goal": [["on", "a", "d"], ["on", "c", "b"], ["on", "b", "table"]],
}


@pytest.mark.parametrize(
    ("constraints", "length"),
    [
        ([], 4),
        ([spec("never_on", block="c", onto="d"), spec("max_table", k=3)], 5),
        ([spec("before", first="d", second="c")], 6),
        ([spec("before", first="d", second="a"), spec("max_table", k=3)], 5),
        ([spec("never_on", block="c", onto="d"), spec("max_table", k=3), spec("max_steps", n=4)], None),
        ([spec("max_table", k=2)], None),
    ],
)
def test_search_is_optimal_against_brute_force(constraints: list[dict[str, Any]], length: int | None) -> None:
    payload = blocks(constraints, **FOUR)
    assert _brute_force_length(payload, 7) == length
    plan = solve("blocks", FOUR, constraints)
    if length is None:
        assert plan is None
    else:
        assert plan is not None and len(plan) == length
        assert validate(payload, "\n".join(plan)).valid


def test_search_logistics_round_trip() -> None:
    problem = logistics()["problem"] | {"packages": {"p1": "x-c"}, "goal": [["at", "p1", "x-a"]]}
    plan = solve("logistics", problem)
    assert plan == (
        "drive(t1, x-a, x-b)",
        "drive(t1, x-b, x-c)",
        "load(p1, t1, x-c)",
        "drive(t1, x-c, x-b)",
        "drive(t1, x-b, x-a)",
        "unload(p1, t1, x-a)",
    )
    assert solve("logistics", problem, [{"kind": "avoid", "truck": "t1", "location": "x-b"}]) is None


def test_search_respects_constraints_and_limits() -> None:
    payload = logistics([{"kind": "capacity", "truck": "t1", "k": 1}])
    plan = solve("logistics", payload["problem"], payload["constraints"])
    assert plan is not None and len(plan) == 8 and validate(payload, "\n".join(plan)).valid
    assert solve("blocks", blocks()["problem"], [{"kind": "fixed", "block": "a"}]) is None
    assert solve("blocks", blocks()["problem"], [{"kind": "max_steps", "n": 1}]) is None
    with pytest.raises(SearchLimitError):
        solve("blocks", SUSSMAN, max_expansions=1)


def test_must_move_names_blocks_off_their_goal_support_above_a_mover_or_on_a_reserved_block() -> None:
    """A block on the table whose goal is the table stays; one whose goal lies elsewhere moves; a block
    resting on a block the goal reserves for another block moves, and so does everything above a mover."""
    table_goal = make_world(
        "blocks",
        {"blocks": ["a", "b"], "stacks": [["a"], ["b"]], "goal": [["on", "a", "table"], ["on", "b", "a"]]},
        [],
    )
    assert table_goal.must_move() == frozenset({"b"})
    # b sits on a, which the goal reserves for c; b's own goal says nothing, and a is where it may stay.
    reserved = make_world(
        "blocks", {"blocks": ["a", "b", "c"], "stacks": [["a", "b"], ["c"]], "goal": [["on", "c", "a"]]}, []
    )
    assert reserved.must_move() == frozenset({"b", "c"})
    # The same with the reserved block second in the block order (its index is 1, not 0).
    second = make_world(
        "blocks",
        {"blocks": ["b", "a", "c", "d"], "stacks": [["a", "b", "d"], ["c"]], "goal": [["on", "c", "a"]]},
        [],
    )
    assert second.must_move() == frozenset({"b", "c", "d"})


def test_road_distances_count_drives_and_put_unreachable_locations_beyond_every_path() -> None:
    problem = logistics()["problem"] | {"cities": {"x": ["x-a", "x-b", "x-c", "x-d"], "y": ["y-a"]}}
    far = 6  # five locations: more drives than any path can take
    assert make_world("logistics", problem, []).distances() == [
        [0, 1, 2, 3, far],
        [1, 0, 1, 2, far],
        [2, 1, 0, 1, far],
        [3, 2, 1, 0, far],
        [far, far, far, far, 0],
    ]


def test_logistics_heuristic_is_handling_left_plus_the_longest_drive_one_package_still_needs() -> None:
    """1 per package in a truck (unload), 2 per package on the ground (load, unload), plus the largest of
    the drives each package needs alone: from its truck to its goal, or from the nearest truck to it and
    on to its goal."""
    problem = logistics()["problem"] | {"trucks": {"t1": "x-a", "t2": "x-d"}, "capacity": {"t1": 2, "t2": 2}}
    _, _, heuristic, _ = make_world("logistics", problem, []).search_space()
    a, b, c, d = 0, 1, 2, 3
    in_t1, in_t2 = -1, -2
    assert heuristic(((a, d), (c, c), 0)) == 0  # both delivered
    assert heuristic(((c, d), (in_t1, c), 0)) == 1  # p1 in t1 at its goal: one unload, no drive
    assert heuristic(((c, a), (in_t2, c), 0)) == 1 + 2  # p1 in t2, two drives from its goal
    # p1 on the ground at x-a (t1 there, then two drives), p2 at x-b (t1 one drive away, then one drive).
    assert heuristic(((a, d), (a, b), 0)) == 2 + 2 + 2
    assert heuristic(((d, d), (a, b), 0)) == 2 + 2 + max(3 + 2, 2 + 1)
    # a delivered package does not end the count: p2 at x-b still needs load, unload and two drives
    assert heuristic(((a, d), (c, b), 0)) == 2 + (1 + 1)
    # every package in a truck adds its unload: p1 in t1 and p2 in t2, both trucks at the goal
    assert heuristic(((c, c), (in_t1, in_t2), 0)) == 1 + 1


def test_logistics_search_plans_for_a_goal_given_in_place_of_the_problems() -> None:
    """A package the given goal leaves out may end anywhere."""
    assert solve("logistics", logistics()["problem"], goal=[("p1", "x-b")]) == (
        "load(p1, t1, x-a)",
        "drive(t1, x-a, x-b)",
        "unload(p1, t1, x-b)",
    )


def test_logistics_successors_keep_every_deliver_before_bit_and_the_load_limit() -> None:
    """p3 may be delivered only once p1 and p2 both are: with p1 delivered, unloading p2 at its goal sets
    p2's bit beside p1's and p3 stays in the truck; p2 is still offered after the blocked p3; a truck of
    capacity 3 holding two packages may load a third."""
    problem = logistics()["problem"] | {
        "packages": {"p3": "x-a", "p1": "x-a", "p2": "x-a"},
        "goal": [["at", "p1", "x-c"], ["at", "p2", "x-c"], ["at", "p3", "x-c"]],
        "capacity": {"t1": 3},
    }
    constraints = [
        spec("deliver_before", first="p1", second="p3"),
        spec("deliver_before", first="p2", second="p3"),
    ]
    _, successors, _, _ = make_world("logistics", problem, constraints).search_space()
    b, c, d, in_t1 = 1, 2, 3, -1
    pos = (in_t1, c, in_t1)  # p3 and p2 in t1 at x-c, p1 delivered
    assert list(successors(((c,), pos, 0b01))) == [
        ("unload(p2, t1, x-c)", ((c,), (in_t1, c, c), 0b11)),
        ("load(p1, t1, x-c)", ((c,), (in_t1, in_t1, in_t1), 0b01)),
        ("drive(t1, x-c, x-b)", ((b,), pos, 0b01)),
        ("drive(t1, x-c, x-d)", ((d,), pos, 0b01)),
    ]


def test_blocks_search_plans_for_a_goal_given_in_place_of_the_problems() -> None:
    assert solve("blocks", blocks()["problem"], goal=[("c", "b")]) == ("move(c, b)",)


def test_the_tightest_of_several_max_table_bounds_holds_in_the_search() -> None:
    """max_table(2) leaves FOUR unsolvable whichever looser bound follows it."""
    assert solve("blocks", FOUR, [spec("max_table", k=2), spec("max_table", k=3)]) is None


def test_blocks_heuristic_counts_a_block_resting_on_a_block_reserved_for_another() -> None:
    """b sits on a, which the goal reserves for c: b and c must each move (a may stay)."""
    problem = {"blocks": ["a", "b", "c"], "stacks": [["a", "b"], ["c"]], "goal": [["on", "c", "a"]]}
    start, _, heuristic, _ = make_world("blocks", problem, []).search_space()
    assert heuristic(start) == 2


def test_blocks_successors_skip_fixed_and_waiting_blocks_and_keep_every_before_bit() -> None:
    """d may move only once b and c both have; a never moves. With b moved, b's and c's moves are offered
    (c's move setting c's bit beside b's), and a block skipped does not end the listing."""
    problem = {
        "blocks": ["d", "a", "b", "c"],
        "stacks": [["d"], ["a"], ["b"], ["c"]],
        "goal": [["on", "d", "a"]],
    }
    constraints = [
        spec("fixed", block="a"),
        spec("before", first="b", second="d"),
        spec("before", first="c", second="d"),
    ]
    _, successors, _, _ = make_world("blocks", problem, constraints).search_space()
    t = -1
    d, a, b = 0, 1, 2
    assert list(successors(((t, t, t, t), 0b01))) == [
        ("move(b, d)", ((t, t, d, t), 0b01)),
        ("move(b, a)", ((t, t, a, t), 0b01)),
        ("move(b, c)", ((t, t, 3, t), 0b01)),
        ("move(c, d)", ((t, t, t, d), 0b11)),
        ("move(c, a)", ((t, t, t, a), 0b11)),
        ("move(c, b)", ((t, t, t, b), 0b11)),
    ]


def _chain(n: int) -> tuple[Any, Any, Any, Any]:
    """States 0..n in a line, goal n, no heuristic guidance: reaching the goal expands n states."""
    return 0, lambda s: iter([(f"step {s + 1}", s + 1)] if s < n else []), lambda s: 0, lambda s: s == n


def test_astar_skips_an_entry_a_cheaper_path_made_stale_and_searches_on() -> None:
    """A is reached first over X1, X2 (cost 3), then over Y (cost 2); its stale cost-3 entry is popped
    before the goal (f 4 < 5) and skipped, and the search goes on to the shortest plan through Y. The
    heuristic is admissible (h <= the true cost to G) but not consistent, as the search allows."""
    graph = {
        "S": ["X1", "Y"],
        "X1": ["X2"],
        "X2": ["A"],
        "Y": ["A"],
        "A": ["B"],
        "B": ["C"],
        "C": ["G"],
        "G": [],
    }
    h = {"S": 0, "X1": 0, "X2": 0, "Y": 2, "A": 1, "B": 0, "C": 0, "G": 0}
    plan = astar("S", lambda n: ((f"to {m}", m) for m in graph[n]), h.__getitem__, lambda n: n == "G")
    assert plan == ("to Y", "to A", "to B", "to C", "to G")


def test_astar_expands_at_most_max_expansions_states_and_says_so_when_it_gives_up() -> None:
    assert astar(*_chain(3), max_expansions=3) == ("step 1", "step 2", "step 3")
    with pytest.raises(SearchLimitError, match=r"^no plan proved optimal within 2 expansions$"):
        astar(*_chain(3), max_expansions=2)


def test_the_default_search_limit_is_200_000_expansions_for_astar_and_solve(monkeypatch) -> None:
    assert astar(*_chain(200_000)) is not None
    with pytest.raises(SearchLimitError):
        astar(*_chain(200_001))
    seen: list[int] = []
    monkeypatch.setattr(world, "astar", lambda *args: seen.append(args[-1]))
    solve("blocks", SUSSMAN)
    assert seen == [200_000]


def test_astar_bound_counts_the_heuristic_and_keeps_plans_of_exactly_the_bound() -> None:
    """A state with g + h over the bound is never queued (so an impossible bound ends after expanding the
    start alone); a plan of exactly the bound's length is found; pruning one successor keeps its siblings."""
    assert astar(*_chain(3), bound=3) == ("step 1", "step 2", "step 3")
    assert astar(*_chain(3), bound=2) is None
    start, successors, _, is_goal = _chain(3)
    assert astar(start, successors, lambda s: 3 - s, is_goal, bound=2, max_expansions=1) is None
    graph = {"s": [("to x", "x"), ("to y", "y")], "y": [("y to g", "g")]}
    h = {"s": 0, "x": 5, "y": 1, "g": 0}
    assert astar("s", lambda s: iter(graph.get(s, [])), h.__getitem__, lambda s: s == "g", bound=2) == (
        "to y",
        "y to g",
    )


def test_astar_breaks_ties_by_insertion_order_and_keeps_the_first_of_equally_short_paths() -> None:
    """Two plans of two steps, through b (listed first) and through a: the one through b is returned, as
    the states were queued, not as their names sort; reaching the goal again as cheaply changes nothing."""
    graph = {"s": [("to b", "b"), ("to a", "a")], "b": [("b to g", "g")], "a": [("a to g", "g")]}
    assert astar("s", lambda s: iter(graph.get(s, [])), lambda s: 0, lambda s: s == "g") == ("to b", "b to g")
    two_goals = {"s": [("to b", "b"), ("to a", "a")], "b": [("b to gb", "gb")], "a": [("a to ga", "ga")]}
    assert astar("s", lambda s: iter(two_goals.get(s, [])), lambda s: 0, lambda s: s in ("ga", "gb")) == (
        "to b",
        "b to gb",
    )


def test_an_unknown_kind_or_constraint_is_one_error_naming_it() -> None:
    with pytest.raises(
        ValueError, match=r"^unknown planning kind 'chess': expected one of \('blocks', 'logistics'\)$"
    ):
        make_world("chess", {}, [])
    with pytest.raises(ValueError, match=r"^unknown constraint kind 'nope'$"):
        constraint_label({"kind": "nope"})


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("x" * 60, "x" * 60),  # at the limit: whole
        ("  " + "x" * 61 + "  ", "x" * 57 + "..."),  # over it: cut to the limit, with an ellipsis
    ],
)
def test_an_unparseable_line_is_quoted_stripped_and_cut_at_60_characters(line: str, shown: str) -> None:
    assert validate(blocks(), line).format_errors == (
        f"line 1: cannot parse {shown!r}: expected one action like move(...)",
    )


# ---- the task set ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return generate.generate_records()


def test_regenerating_gives_the_shipped_file(records: list[dict[str, Any]], tmp_path) -> None:
    out = tmp_path / "planning.jsonl"
    write_jsonl(records, out)
    assert out.read_bytes() == generate.OUTPUT.read_bytes()
    assert [task.to_record() for task in read_jsonl(generate.OUTPUT)] == records


def _flaw_shows(flaw: str, report) -> bool:
    if flaw == "malformed":
        return bool(report.format_errors)
    if report.format_errors:
        return False
    if flaw == "illegal_move":
        return report.illegal_step is not None
    if flaw == "missing_steps":
        return report.illegal_step is not None or report.goals_met < report.goals_total
    if flaw == "constraint_violation":
        return (
            bool(report.constraint_violations)
            and report.illegal_step is None
            and (report.goals_met == report.goals_total)
        )
    if flaw == "wrong_goal":
        return report.illegal_step is None and report.goals_met < report.goals_total
    return False


def test_references_valid_and_every_variant_rejected_as_labelled(records: list[dict[str, Any]]) -> None:
    kinds: Counter[str] = Counter()
    for record in records:
        payload = record["payload"]
        check_payload(payload)
        report = validate(payload, payload["reference"])
        assert report.valid, (record["task_id"], report.issues)
        assert total(artifact_scores(payload, payload["reference"])) == (4.0, 4.0)
        pool = payload["pool"]
        assert POOL_MIN <= len(pool) <= POOL_MAX
        sources = [item["source"] for item in pool]
        assert len(set(sources)) == len(sources) and payload["reference"] not in sources
        for item in pool:
            assert item["flaw"] in FLAWS
            kinds[item["flaw"]] += 1
            report = validate(payload, item["source"])
            assert not report.valid and report.issues
            score, best = total(artifact_scores(payload, item["source"]))
            assert score < best
            assert _flaw_shows(item["flaw"], report), (record["task_id"], item["flaw"], report.issues)
            if item["flaw"] == "constraint_violation":
                assert payload["constraints"]
    assert set(kinds) == FLAWS


def test_difficulty_shapes(records: list[dict[str, Any]]) -> None:
    for record in records:
        payload, difficulty = record["payload"], record["difficulty"]
        n_constraints = len(payload["constraints"])
        low, high = {"easy": (0, 1), "standard": (1, 2), "hard": (2, 3)}[difficulty]
        assert low <= n_constraints <= high, record["task_id"]
        problem = payload["problem"]
        if payload["kind"] == "blocks":
            sizes = {"easy": (3, 4), "standard": (4, 6), "hard": (6, 7)}[difficulty]
            assert sizes[0] <= len(problem["blocks"]) <= sizes[1], record["task_id"]
        elif difficulty == "easy":
            assert len(problem["trucks"]) == 1 and len(problem["packages"]) == 2
        elif difficulty == "hard":
            assert len(problem["trucks"]) == 2
        assert f"{payload['kind']}/" in record["template"]


def test_hard_constraints_break_every_unconstrained_shortest_plan(records: list[dict[str, Any]]) -> None:
    for record in records:
        if record["difficulty"] != "hard":
            continue
        payload = record["payload"]
        free = solve(payload["kind"], payload["problem"])
        assert free is not None and len(free) < len(payload["reference"].splitlines()), record["task_id"]
        assert validate(payload, "\n".join(free)).constraint_violations


def test_ids_and_one_difficulty_per_template(records: list[dict[str, Any]]) -> None:
    assert [r["task_id"] for r in records] == [f"planning-{i:03d}" for i in range(100)]
    assert {(r["domain"], r["version"]) for r in records} == {("planning", "v0")}
    by_template = {r["template"]: r["difficulty"] for r in records}
    assert all(by_template[r["template"]] == r["difficulty"] for r in records)


def _entities(record: dict[str, Any]) -> set[str]:
    problem = record["payload"]["problem"]
    return set(problem["blocks"]) if "blocks" in problem else set(problem["cities"])


def test_entity_names_differ_between_template_families(records: list[dict[str, Any]]) -> None:
    owner: dict[str, str] = {}
    for record in records:
        for name in _entities(record):
            assert owner.setdefault(name, record["template"]) == record["template"], name
    train = set().union(*(_entities(r) for r in records if r["split"] == "train"))
    held_out = set().union(*(_entities(r) for r in records if r["split"] == "eval"))
    assert not train & held_out


def test_a_plan_over_the_length_bound_is_not_validated_and_earns_nothing() -> None:
    long_plan = BLOCKS_PLAN + "\nmove(a, table)\nmove(a, c)" * (MAX_PLAN_STEPS // 2)
    report = validate(blocks(), long_plan)
    assert report.format_errors == (f"the plan has {MAX_PLAN_STEPS + 2} steps, over the bound of 200",)
    assert all(score == 0.0 for score, _ in artifact_scores(blocks(), long_plan).values())
    assert validate(blocks(), "\n".join([*BLOCKS_PLAN.splitlines()] * 100)).parsed_steps == 200


def test_logistics_constraints_are_each_reported_with_their_step_and_the_load_after_unloads() -> None:
    """Every broken constraint is reported, in the order found, naming its step, line and label; the
    capacity constraint counts what the truck holds now (an unload frees one place)."""
    plan = "load(p1, t1, x-a)\nunload(p1, t1, x-a)\nload(p1, t1, x-a)\ndrive(t1, x-a, x-b)\nload(p2, t1, x-b)"
    rules = [spec("avoid", truck="t1", location="x-b"), spec("capacity", truck="t1", k=1)]
    report = validate(logistics(rules), plan)
    assert report.illegal_step is None
    assert report.constraint_violations == (
        "step 4 (line 4) drive(t1, x-a, x-b) takes t1 into x-b, forbidden by avoid(t1, x-b)",
        "step 5 (line 5) load(p2, t1, x-b) loads 2 packages into t1, more than capacity(t1, 1) allows",
    )
    unloaded = "load(p1, t1, x-a)\ndrive(t1, x-a, x-b)\nunload(p1, t1, x-b)\nload(p2, t1, x-b)"
    assert validate(logistics([rules[1]]), unloaded).constraint_violations == ()


def test_an_executable_plan_that_achieves_nothing_earns_no_constraint_credit() -> None:
    """Keeping every constraint counts only with some goal progress: a legal plan that moves a truck
    and delivers nothing earns its format point only."""
    assert artifact_scores(logistics(), "drive(t1, x-a, x-b)") == {
        "constraints": (0.0, 1.0),
        "goal_coverage": (0.0, 2.0),
        "plan_format": (1.0, 1.0),
    }


def _two_trucks(constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    payload = logistics(constraints)
    payload["problem"]["trucks"] = {"t1": "x-a", "t2": "x-b"}
    payload["problem"]["capacity"] = {"t1": 2, "t2": 2}
    return payload


def test_logistics_messages_say_where_each_package_is() -> None:
    """An unload names where the package really is (in which truck, or at which place); an unmet goal
    names the package's place, or its truck and the truck's place."""
    payload = _two_trucks()
    at = validate(payload, "load(p1, t1, x-a)\nunload(p2, t1, x-a)")
    assert at.illegal_reason == "unload(p2, t1, x-a): p2 is not in t1 (it is at x-b)"
    assert at.unmet_goals == (
        "at(p1, x-c) not met: p1 is in t1 (at x-a)",
        "at(p2, x-c) not met: p2 is at x-b",
    )
    other = validate(payload, "load(p2, t2, x-b)\ndrive(t1, x-a, x-b)\nunload(p2, t1, x-b)")
    assert other.illegal_reason == "unload(p2, t1, x-b): p2 is not in t1 (it is in t2)"
    world = make_world("logistics", payload["problem"], [])
    state = ({"t1": "x-a", "t2": "x-b"}, {"p1": "x-a", "p2": "t2"})
    assert world.goal_report(state, [("p1", "x-a"), ("p2", "x-d")]) == [
        "at(p2, x-d) not met: p2 is in t2 (at x-b)"
    ]


def test_deliver_before_counts_only_a_delivery_to_the_destination() -> None:
    """Unloading the first package anywhere but its destination does not deliver it: delivering the
    second then breaks the constraint, reported with its step."""
    payload = _two_trucks([spec("deliver_before", first="p1", second="p2")])
    plan = "\n".join(
        [
            "load(p1, t1, x-a)",
            "drive(t1, x-a, x-b)",
            "unload(p1, t1, x-b)",
            "load(p2, t2, x-b)",
            "drive(t2, x-b, x-c)",
            "unload(p2, t2, x-c)",
        ]
    )
    assert validate(payload, plan).constraint_violations == (
        "step 6 (line 6) unload(p2, t2, x-c) delivers p2 before p1 has been delivered, breaking "
        "deliver_before(p1, p2)",
    )


def test_blocks_findings_and_report_counts_in_words() -> None:
    """Parse errors name the line, the arity and the known actions; each broken blocks constraint is
    reported with its step, line and label (two at once when two break); the report counts constraints,
    goal atoms needed, gained and lost, steps left unexecuted after an illegal one, and says where each
    unmet goal's block is."""
    bad = validate(blocks(), "move(b)\nmove(a, c\nmove(b, table, c)\njump(a)")
    assert bad.format_errors == (
        "line 1: move takes 2 arguments (block, destination), got 1",
        "line 2: cannot parse 'move(a, c': expected one action like move(...)",
        "line 3: move takes 2 arguments (block, destination), got 3",
        "line 4: unknown action 'jump' (known actions: move)",
    )
    assert bad.unmet_goals == ("on(a, c) not met: a is on the table", "on(b, table) not met: b is on a")
    assert validate(blocks(), "move(B, Table)\nmove(a, c)").format_errors == ()  # names are case-blind
    rules = [spec("fixed", block="b"), spec("never_on", block="a", onto="c"), spec("max_table", k=1)]
    report = validate(blocks(rules), BLOCKS_PLAN)
    assert report.constraint_violations == (
        "step 1 (line 1) move(b, table) moves b, which fixed(b) forbids moving",
        "step 1 (line 1) move(b, table) leaves 3 stacks on the table, more than max_table(1) allows",
        "step 2 (line 2) move(a, c) puts a directly on c, forbidden by never_on(a, c)",
    )  # in the order they are found
    assert (report.constraints_total, report.goals_needed, report.goals_gained, report.goals_lost) == (
        3,
        2,
        2,
        0,
    )
    assert validate(blocks([spec("max_table", k=3)]), BLOCKS_PLAN).constraint_violations == ()
    over = validate(blocks([spec("max_steps", n=1)]), BLOCKS_PLAN)
    assert over.constraint_violations == (
        "the plan has 2 steps but max_steps(1) allows 1 (steps 2-2 are over the limit)",
    )
    illegal = validate(blocks(), "move(a, c)\nmove(b, table)")
    assert (illegal.illegal_reason, illegal.unexecuted_steps) == ("move(a, c): a is not clear (b is on a)", 1)
    assert validate(blocks(), BLOCKS_PLAN).unexecuted_steps == 0
    moved = validate(blocks(), "move(b, c)")
    assert moved.unmet_goals == ("on(a, c) not met: a is on the table", "on(b, table) not met: b is on c")


def test_max_table_counts_the_stacks_left_when_a_block_leaves_the_table() -> None:
    """Three lone blocks are three stacks; putting one on another leaves two: over max_table(1), within
    max_table(2)."""
    lone = {"stacks": [["a"], ["b"], ["c"]]}
    assert validate(blocks([spec("max_table", k=1)], **lone), "move(a, b)").constraint_violations == (
        "step 1 (line 1) move(a, b) leaves 2 stacks on the table, more than max_table(1) allows",
    )
    assert validate(blocks([spec("max_table", k=2)], **lone), "move(a, b)").constraint_violations == ()


def test_goal_atoms_true_at_the_start_earn_nothing_and_cost_one_when_broken() -> None:
    """c starts on the table, so of the goal {b on the table, c on the table} one atom is needed: moving b
    down gains it (full coverage); stacking c on b afterwards loses the atom that held at the start, and
    gained minus lost leaves no coverage."""
    payload = blocks(goal=[["on", "b", "table"], ["on", "c", "table"]])
    down = validate(payload, "move(b, table)")
    assert (down.goals_needed, down.goals_gained, down.goals_lost, down.progress) == (1, 1, 0, 1.0)
    assert artifact_scores(payload, "move(b, table)")["goal_coverage"] == (2.0, 2.0)
    broken = validate(payload, "move(b, table)\nmove(c, b)")
    assert (broken.goals_needed, broken.goals_gained, broken.goals_lost, broken.progress) == (1, 1, 1, 0.0)
    assert artifact_scores(payload, "move(b, table)\nmove(c, b)")["goal_coverage"] == (0.0, 2.0)


def _valid(payload: dict[str, Any], plan: str, **changes: Any) -> dict[str, Any]:
    return {**payload, "reference": plan, **changes}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            _valid(blocks(), BLOCKS_PLAN, extra=1),
            "payload keys ['constraints', 'extra', 'kind', 'pool', 'problem', 'reference'] != "
            "['constraints', 'kind', 'pool', 'problem', 'reference']",
        ),
        (_valid(blocks(), BLOCKS_PLAN, kind="chess"), "unknown planning kind 'chess'"),
        (_valid(blocks([{"kind": "fixed"}]), BLOCKS_PLAN), "bad blocks constraint spec {'kind': 'fixed'}"),
        (_valid(blocks([{"kind": "nope"}]), BLOCKS_PLAN), "bad blocks constraint spec {'kind': 'nope'}"),
        (
            _valid(blocks([{"kind": "fixed", "block": "a", "x": 1}]), BLOCKS_PLAN),
            "bad blocks constraint spec {'kind': 'fixed', 'block': 'a', 'x': 1}",
        ),
        (
            _valid(blocks(), BLOCKS_PLAN, problem={"blocks": ["a"], "goal": []}),
            "malformed blocks problem: KeyError('stacks')",
        ),
        (
            _valid(blocks(blocks=["A", "b"], stacks=[["A"], ["b"]], goal=[["on", "A", "b"]]), "move(A, b)"),
            "block name 'A' must be lower-case letters, digits, '_' or '-'",
        ),
        (
            _valid(blocks(), "move(b, table)\nmove(z, table)"),
            "reference plan is not valid: format: line 2: unknown block 'z' (argument 1 of move); "
            "goal: on(a, c) not met: a is on the table",
        ),
        (
            _valid(blocks([{"kind": "max_table", "k": 0}]), BLOCKS_PLAN),
            "max_table(0): k must be a positive integer",
        ),
        (
            _valid(blocks([{"kind": "max_table", "k": "2"}]), BLOCKS_PLAN),
            "max_table(2): k must be a positive integer",
        ),
        (
            _valid(blocks([{"kind": "never_on", "block": "a", "onto": "z"}]), BLOCKS_PLAN),
            "never_on(a, z): unknown block 'z'",
        ),
        (
            _valid(logistics([{"kind": "avoid", "truck": "t9", "location": "x-a"}]), LOGISTICS_PLAN),
            "avoid(t9, x-a): unknown truck 't9'",
        ),
        (
            _valid(logistics([{"kind": "avoid", "truck": "t1", "location": "x-z"}]), LOGISTICS_PLAN),
            "avoid(t1, x-z): unknown location 'x-z'",
        ),
        (
            _valid(logistics([{"kind": "deliver_before", "first": "p1", "second": "p9"}]), LOGISTICS_PLAN),
            "deliver_before(p1, p9): unknown package 'p9'",
        ),
        (_valid(blocks(), BLOCKS_PLAN, pool=[{"flaw": "x"}]), "bad pool entry {'flaw': 'x'}"),
    ],
)
def test_a_bad_payload_is_one_error_naming_its_fault(payload: dict[str, Any], message: str) -> None:
    """Constraint arguments are checked before the reference is run, so a bad one is named, not a crash."""
    with pytest.raises(ValueError) as caught:
        check_payload(payload)
    assert str(caught.value) == message


def test_valid_payloads_pass_the_check() -> None:
    check_payload(
        _valid(blocks([{"kind": "max_table", "k": 3}]), BLOCKS_PLAN, pool=[{"flaw": "f", "source": ""}])
    )
    check_payload(
        _valid(logistics([{"kind": "deliver_before", "first": "p1", "second": "p2"}]), LOGISTICS_PLAN)
    )


def test_a_constraint_bound_of_one_is_valid() -> None:
    two = blocks(blocks=["a", "b"], stacks=[["a"], ["b"]], goal=[["on", "a", "b"]])
    check_payload(_valid({**two, "constraints": [{"kind": "max_steps", "n": 1}]}, "move(a, b)"))
