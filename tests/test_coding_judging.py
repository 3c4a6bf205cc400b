"""The coding verifier's in-process decisions, without a sandbox run: reading the child's records, judging
a data test, the safety scan's exact findings, signatures, test validation and which hidden tests earn
credit."""

from __future__ import annotations

import json

import pytest

from harness_gym.domains.coding import values, verifier

NONCE = "n0nce"


def _line(record: object, nonce: str = NONCE) -> str:
    return f"{nonce} {json.dumps(record)}"


# -- the child's records ----------------------------------------------------------------------------------
def test_read_records_keeps_only_well_formed_tagged_records_in_range() -> None:
    """Only lines tagged with the nonce and a space count; unparsable JSON, non-objects, a source index
    that is not an int (a bool is not) or out of range, and a call index out of range are skipped."""
    value = values.encode(3)
    stdout = "\n".join(
        [
            f"{NONCE}{json.dumps({'s': 0, 'i': 0, 'value': value})}",  # no space after the nonce
            _line({"s": 0, "i": 0, "value": value}, nonce="other"),
            f"{NONCE} {{not json",
            _line([0, 0]),
            _line({"s": True, "i": 0, "value": value}),
            _line({"s": -1, "i": 0, "value": value}),
            _line({"s": 2, "i": 0, "value": value}),
            _line({"s": 1, "i": -1, "value": value}),
            _line({"s": 1, "i": 3, "value": value}),
            _line({"s": 1, "i": 1.0, "value": value}),
            "noise",
            _line({"s": 1, "i": 2, "value": value}),
        ]
    )
    outcomes, ends, done = verifier._read_records(stdout, NONCE, sources=2, calls=3)
    assert outcomes == {(1, 2): ("value", 3)}
    assert ends == {} and done is False


def test_read_records_first_record_wins_and_raised_calls_keep_their_message() -> None:
    """The first record of a call and the first end of a source win; a record without a value is a
    raised call whose message is cut at 200 characters; an end status is cut at 300."""
    stdout = "\n".join(
        [
            _line({"s": 0, "i": 0, "raised": "ValueError: " + "x" * 300}),
            _line({"s": 0, "i": 0, "value": values.encode(1)}),
            _line({"s": 0, "i": 1, "value": values.encode((1, 2.5))}),
            _line({"s": 0, "i": 1, "value": values.encode(9)}),
            _line({"s": 1, "i": 0}),
            _line({"s": 0, "end": "e" * 400}),
            _line({"s": 0, "end": "second"}),
            _line({"s": 1, "end": 7}),
        ]
    )
    outcomes, ends, done = verifier._read_records(stdout, NONCE, sources=2, calls=2)
    assert outcomes == {
        (0, 0): ("raised", ("ValueError: " + "x" * 300)[:200]),
        (0, 1): ("value", (1, 2.5)),
        (1, 0): ("raised", ""),
    }
    assert ends == {0: "e" * 300, 1: "7"}
    assert done is False


def test_read_records_stops_at_done_and_fails_an_undecodable_value() -> None:
    """``{"done": true}`` ends the reading (later lines are ignored); only ``true`` counts as done. A value
    with no typed decoding fails its call instead of raising."""
    stdout = "\n".join(
        [
            _line({"done": 1}),
            _line({"s": 0, "i": 0, "value": {"no such tag": 1}}),
            _line({"done": True}),
            _line({"s": 0, "i": 1, "value": values.encode(1)}),
        ]
    )
    outcomes, ends, done = verifier._read_records(stdout, NONCE, sources=1, calls=2)
    assert outcomes == {(0, 0): ("raised", "returned a value that cannot be compared")}
    assert done is True and ends == {}


# -- judging a data test -----------------------------------------------------------------------------------
def test_judge_passes_equal_values_and_reports_a_raised_call_verbatim() -> None:
    """A raised call fails with its own message; an equal value passes with no message."""
    test = {"args": [1], "expected": values.encode((1, 2))}
    assert verifier.judge(test, [("raised", "ZeroDivisionError: division by zero")]) == (
        False,
        "ZeroDivisionError: division by zero",
    )
    assert verifier.judge(test, [("value", (1, 2))]) == (True, "")
    assert verifier.judge(test, [("value", [1, 2])]) == (False, "got [1, 2]")


def test_judge_failure_message_is_the_short_repr_of_the_value() -> None:
    """A wrong value is reported as ``got <repr>``, whitespace collapsed, cut to 200 characters with
    ``...``."""
    test = {"args": [], "expected": values.encode("a")}
    assert verifier.judge(test, [("value", "x    y")]) == (False, "got 'x y'")
    long = "z" * 300
    ok, why = verifier.judge(test, [("value", long)])
    assert not ok and why == "got " + repr(long)[:197] + "..." and len(why) == 4 + 200


def test_judge_reads_each_tolerance_limit_and_defaults_the_other_to_zero() -> None:
    """``rel`` and ``abs`` are each read under their own name; a missing one is 0 (exact on that side);
    an empty tolerance still lets an int match an equal float."""
    expected = values.encode(100.0)
    rel = {"args": [], "expected": expected, "tolerance": {"rel": 0.01}}
    assert verifier.judge(rel, [("value", 100.5)])[0]
    assert not verifier.judge(rel, [("value", 102.0)])[0]
    tight = {"args": [], "expected": expected, "tolerance": {"rel": 0.001}}
    assert not verifier.judge(tight, [("value", 100.5)])[0]  # no absolute allowance unless declared
    absolute = {"args": [], "expected": expected, "tolerance": {"abs": 0.6}}
    assert verifier.judge(absolute, [("value", 100.5)])[0]
    assert not verifier.judge(absolute, [("value", 100.7)])[0]
    assert verifier.judge({"args": [], "expected": expected, "tolerance": {}}, [("value", 100)])[0]
    assert not verifier.judge({"args": [], "expected": expected}, [("value", 100)])[0]


# -- the safety scan ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from . import sibling\n", ("relative import: .",)),
        ("from ..pkg import x\n", ("relative import: ..pkg",)),
        ("from os.path import join, exists\n", ("forbidden import: from os.path import join, exists",)),
        ("import os, os\n", ("forbidden import: os",)),  # reported once
        ("__import__('os')\n", ("forbidden import: __import__('os')", "forbidden call: __import__()")),
        (
            "math.__import__('os')\n",
            ("forbidden import: __import__('os')", "forbidden attribute: .__import__"),
        ),
        ("x.eval('1')\n", ()),  # a method called eval is not the builtin
        ("getattr(x, '__dict__')\n", ("forbidden call: getattr(..., '__dict__')",)),
        ("setattr(x, 'f_back', 1)\n", ("forbidden call: setattr(..., 'f_back')",)),
        ("delattr(x, '__x')\n", ("forbidden call: delattr(..., '__x')",)),
        ("hasattr(x, 'gi_frame')\n", ("forbidden call: hasattr(..., 'gi_frame')",)),
        ("getattr(x, 'name')\n", ()),
        ("getattr(x)\n", ()),
        ("sorted(x, '__key')\n", ()),
        ("t.getattr(x, '__dict__')\n", ("forbidden call: getattr(..., '__dict__')",)),
        ("y = __builtins__\n", ("forbidden name: __builtins__",)),
        ("def f(x=input):\n    return x\n", ("forbidden call: input()",)),
        ("def f(input):\n    return input\n", ()),
        ("def f(input=input):\n    return input\n", ("forbidden call: input()",)),  # default: the builtin
        ("fs[0]('os')\n", ()),  # a call of neither a name nor an attribute
        ("input = 1\nx = input\n", ()),
        ("def f():\n    return input\n", ("forbidden call: input()",)),
        ("def f():\n    return open\n", ("forbidden call: open()",)),
        ("def f(open):\n    return open\n", ("forbidden call: open()",)),  # not a shadowable name
    ],
)
def test_safety_scan_reports_exactly_these_findings(source: str, found: tuple[str, ...]) -> None:
    """Each construct gives exactly these messages, each once, in the order of the walk."""
    assert verifier.safety_violations(source) == found


def test_allowed_calls_exempt_only_the_named_builtins() -> None:
    """A task's ``allowed_calls`` exempts its builtins, called or named; other forbidden calls remain."""
    source = "def f(s):\n    g = eval\n    return eval(s) + len(open(s).read())\n"
    assert verifier.safety_violations(source, ("eval",)) == ("forbidden call: open()",)
    assert verifier.safety_violations(source) == ("forbidden call: eval()", "forbidden call: open()")


# -- signatures --------------------------------------------------------------------------------------------
def test_signature_compares_star_args_and_refuses_what_is_not_a_plain_def() -> None:
    """``*args`` and ``**kwargs`` are part of the signature; a signature that does not parse as a def
    header (indented, or a class), or a source without the function, is not ok."""
    assert verifier.signature_ok("def f(a, *rest):\n    pass\n", "f", "def f(a, *rest):")
    assert not verifier.signature_ok("def f(a):\n    pass\n", "f", "def f(a, *rest):")
    assert not verifier.signature_ok("def f(a, *more):\n    pass\n", "f", "def f(a, *rest):")
    assert verifier.signature_ok("def f(a, **kw):\n    pass\n", "f", "def f(a, **kw) -> int:\n")
    assert not verifier.signature_ok("def f(a):\n    pass\n", "f", "def f(a, **kw):")
    assert not verifier.signature_ok("def f(a):\n    pass\n", "f", "  def f(a):")
    assert not verifier.signature_ok("class f:\n    pass\n", "f", "def f(a):")
    assert not verifier.signature_ok("def f(a):\n    pass\n", "f", "class f(a):")
    assert not verifier.signature_ok("x = 1\n", "f", "def f(a):")


# -- validating a test -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("test", "message"),
    [
        ([1], "a test must be a JSON object"),
        ({"calls": [[1]], "check": "pass", "extra": 1}, "a code test has keys calls, check and optionally"),
        ({"calls": "x", "check": "pass"}, "a code test has keys calls, check and optionally"),
        ({"calls": [1], "check": "pass"}, "a call's arguments must be a list: 1"),
        ({"args": [1]}, "a data test has keys args, expected and optionally tolerance"),
        ({"expected": 1}, "a data test has keys args, expected and optionally tolerance"),
        ({"args": [1], "expected": 1, "x": 1}, "a data test has keys args, expected and optionally"),
        ({"args": 1, "expected": 1}, "a test's args must be a list: 1"),
        ({"args": [], "expected": 1, "tolerance": [0.1]}, r"tolerance must be \{'rel': >= 0"),
        ({"args": [], "expected": 1, "tolerance": {"rel": 0.1, "x": 0}}, "tolerance must be"),
        ({"args": [], "expected": 1, "tolerance": {"abs": -0.1}}, "tolerance must be"),
        ({"args": [], "expected": 1, "tolerance": {"abs": "0.1"}}, "tolerance must be"),
    ],
)
def test_validate_test_names_the_problem(test: object, message: str) -> None:
    """Each malformed record is refused with the message naming what is wrong."""
    with pytest.raises(ValueError, match=message):
        verifier.validate_test(test)


def test_validate_test_accepts_every_documented_shape() -> None:
    """Code tests with and without text, data tests with no, empty, one-sided and zero tolerances."""
    for test in (
        {"calls": [[1], [2]], "check": "assert results[0] < results[1]"},
        {"calls": [], "check": "pass", "text": "t"},
        {"args": [1], "expected": 1},
        {"args": [], "expected": None, "tolerance": {}},
        {"args": [], "expected": 1, "tolerance": {"rel": 0}},
        {"args": [], "expected": 1, "tolerance": {"rel": 1e-9, "abs": 0.0}},
    ):
        verifier.validate_test(test)


# -- credit ------------------------------------------------------------------------------------------------
def test_credited_tests_drop_inputs_shown_as_visible_tests_or_shown_inputs() -> None:
    """A hidden test whose input the prompt showed (a visible test, or ``shown_inputs``) earns no credit;
    a code test is credited while any of its calls is unseen; none left is an error naming the task."""
    hidden = [
        {"args": [1], "expected": 1},
        {"args": [2], "expected": 2},
        {"args": [3], "expected": 3},
        {"calls": [[1], [4]], "check": "pass"},
        {"calls": [[1], [2]], "check": "pass"},
    ]
    payload = {
        "function_name": "f",
        "visible_tests": [{"args": [1], "expected": 0}],
        "shown_inputs": [[2]],
        "hidden_tests": hidden,
    }
    assert verifier.credited_tests(payload) == [hidden[2], hidden[3]]
    without = {k: v for k, v in payload.items() if k != "shown_inputs"}
    assert verifier.credited_tests(without) == [hidden[1], hidden[2], hidden[3], hidden[4]]
    with pytest.raises(ValueError, match=r"^f: every hidden test repeats an input the prompt shows$"):
        verifier.credited_tests({**payload, "hidden_tests": hidden[:2]})


def test_pass_rate_and_structural_coverage() -> None:
    """pass_rate is passed / total (0 for no tests); coverage counts four items, the visible tests only
    when all pass without a module error."""
    assert verifier.TestReport(3, 4, ()).pass_rate == 0.75
    assert verifier.TestReport(0, 0, ()).pass_rate == 0.0
    full = verifier.TestReport(2, 2, ())
    report = verifier.StructuralReport(True, True, True, full, ())
    assert report.coverage == 1.0
    assert verifier.StructuralReport(True, False, True, full, ()).coverage == 0.75
    assert verifier.StructuralReport(False, True, False, full, ()).coverage == 0.5
    assert verifier.StructuralReport(True, True, True, verifier.TestReport(1, 2, ()), ()).coverage == 0.75
    errored = verifier.TestReport(0, 0, (), error="timeout")
    assert verifier.StructuralReport(True, True, True, errored, ()).coverage == 0.75
