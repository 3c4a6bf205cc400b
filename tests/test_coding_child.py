"""The sandboxed child's loop (``harness_gym.domains.coding.child``) run in this process.

The verifier runs it inside the sandbox (bubblewrap, ``python -S``: no site-packages, so coverage cannot
follow it there); here ``main`` reads its job from a replaced stdin and writes its records to a replaced
stdout, and its final ``os._exit`` becomes an exception, so every record it writes can be checked.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys

import pytest

from harness_gym.domains.coding import child, values

NONCE = "n0nce"


class Exited(Exception):
    """``os._exit`` was called (with the code as the argument)."""


def run_child(monkeypatch: pytest.MonkeyPatch, sources: list[str], calls: list[list], budget=None) -> list:
    job = {"nonce": NONCE, "function": "f", "sources": sources, "calls": calls, "budget": budget}
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(job) + "\n"))
    monkeypatch.setattr(sys, "stdout", out)

    def exit_(code: int) -> None:
        raise Exited(code)

    monkeypatch.setattr(os, "_exit", exit_)
    handler = signal.getsignal(signal.SIGVTALRM)
    try:
        with pytest.raises(Exited) as info:
            child.main(values)
    finally:
        signal.signal(signal.SIGVTALRM, handler)
    assert info.value.args == (0,)
    records = []
    for line in out.getvalue().splitlines():
        nonce, _, record = line.partition(" ")
        assert nonce == NONCE, line  # every line is a record: the candidate's prints went elsewhere
        records.append(json.loads(record))
    assert records[-1] == {"done": True}
    return records[:-1]


def test_values_and_exceptions_of_every_call_are_reported(monkeypatch) -> None:
    source = (
        "def f(a, b):\n"
        "    print('a forged record', flush=True)\n"
        "    if b == 0:\n"
        "        raise ZeroDivisionError('b is zero')\n"
        "    return (a // b, {a, b})\n"
    )
    records = run_child(monkeypatch, [source], [values.encode([7, 2]), values.encode([1, 0])])
    assert records == [
        {"s": 0, "i": 0, "value": values.encode((3, {7, 2}))},
        {"s": 0, "i": 1, "raised": "ZeroDivisionError: b is zero"},
        {"s": 0, "end": "ok"},
    ]


def test_code_that_cannot_run_or_defines_no_function_is_a_crash(monkeypatch) -> None:
    sources = ["def f(:\n", "g = 1\n", "raise ValueError\n", "f = 3\n"]
    records = run_child(monkeypatch, sources, [[1]])
    assert [r["end"] for r in records] == [
        "crash: SyntaxError: invalid syntax (<candidate>, line 1)",
        "crash: the code defines no function f",
        "crash: ValueError",
        "crash: the code defines no function f",
    ]
    assert [r["s"] for r in records] == [0, 1, 2, 3]  # no call record: nothing was called


def test_values_without_an_encoding_or_too_large_are_not_compared(monkeypatch) -> None:
    source = (
        "class Unprintable(Exception):\n"
        "    def __str__(self):\n"
        "        raise RuntimeError('no text')\n"
        "def f(kind):\n"
        "    if kind == 'object':\n"
        "        return object()\n"
        "    if kind == 'large':\n"
        f"        return ['x'] * {child.MAX_VALUE_CHARS // 4}\n"
        "    raise Unprintable()\n"
    )
    records = run_child(monkeypatch, [source], [["object"], ["large"], ["raise"]])
    assert records[0]["raised"].startswith("returned a value that cannot be compared: Unsupported")
    assert records[1] == {"s": 0, "i": 1, "raised": "returned a value too large to compare"}
    assert records[2] == {"s": 0, "i": 2, "raised": "Unprintable"}  # its str() failed: the name alone
    assert records[3] == {"s": 0, "end": "ok"}


def test_a_source_over_its_cpu_budget_times_out_and_the_next_one_runs(monkeypatch) -> None:
    endless = "def f(x):\n    while True:\n        pass\n"
    quick = "def f(x):\n    return x + 1\n"
    records = run_child(monkeypatch, [endless, quick], [[1]], budget=0.2)
    assert records == [
        {"s": 0, "end": "timeout"},
        {"s": 1, "i": 0, "value": 2},
        {"s": 1, "end": "ok"},
    ]
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)  # disarmed after each source
