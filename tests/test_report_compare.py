"""benchmarks/compare_results.py: one verdict per section (identical / equal within tolerance / DIFFERS),
exit 0 unless something DIFFERS, on hand-built results files."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("compare_results", ROOT / "benchmarks" / "compare_results.py")
compare_results = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = compare_results  # its dataclass looks its module up
_spec.loader.exec_module(compare_results)

PLANNING, CODING = "HarnessPlanning-v0", "HarnessCoding-v0"


def _results() -> dict[str, Any]:
    def setting(g: float) -> dict[str, Any]:
        return {
            "compare": {"base": "base", "policies": {"base": {"G": g, "pairs": 60}, "awr": {"G": g + 0.1}}},
            "buffer": {"N": 600, "checks": {"HMS": {"delta_Q": 0.125, "identity_error": 2e-17}}},
            "ope": {"awr": {"0": {"true": 0.5, "wis": 0.4321, "ess": 12.0}}},
            "timings": {"train_s": 3.0},
        }

    return {
        "schema": "harness-gym-results-v1",
        "config": {"out": "results", "seeds": [0, 1], "episodes": 60},
        "settings": {PLANNING: setting(0.5), CODING: setting(0.25)},
        "aggregate": {"metrics": {"awr": {"iqm": {"estimate": 61.5, "ci_low": 50.0, "ci_high": 70.0}}}},
        "timings": {"total_s": 100.0},
    }


def _run(tmp_path: Path, before: dict, after: dict, *options: str, capsys) -> tuple[int, list[str]]:
    paths = []
    for name, doc in (("before", before), ("after", after)):
        path = tmp_path / name / "results.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    code = compare_results.main([*paths, *options])
    return code, capsys.readouterr().out.splitlines()


def _line(lines: list[str], name: str) -> str:
    return next(line for line in lines if line.startswith(f"{name}:"))


def test_same_results_with_other_timings_and_output_directory_are_identical(tmp_path, capsys) -> None:
    before, after = _results(), _results()
    after["timings"]["total_s"] = 5.0
    after["settings"][PLANNING]["timings"]["train_s"] = 9.0
    after["config"]["out"] = "elsewhere"
    code, lines = _run(tmp_path, before, after, capsys=capsys)
    assert code == 0
    assert lines[0].startswith("tolerance on floats: rtol 1e-09, atol 1e-12")
    verdicts = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines[1:]}
    assert verdicts == {
        PLANNING: "identical",
        CODING: "identical",
        "aggregate": "identical",
        "config": "identical",
        "schema": "identical",
    }


def test_rounding_differences_are_equal_within_tolerance_and_named_per_part(tmp_path, capsys) -> None:
    before, after = _results(), _results()
    after["settings"][PLANNING]["ope"]["awr"]["0"]["wis"] += 2.3e-13
    after["settings"][PLANNING]["buffer"]["checks"]["HMS"]["identity_error"] = 5e-17  # near 0: atol
    code, lines = _run(tmp_path, before, after, capsys=capsys)
    assert code == 0
    assert _line(lines, PLANNING).startswith(
        f"{PLANNING}: equal within tolerance (2 floats, max |diff| 2.3e-13"
    )
    assert "    ope: equal within tolerance (1 float, max |diff| 2.3e-13, max rel 5.3e-13)" in lines
    assert any(line.startswith("    buffer: equal within tolerance (1 float") for line in lines)
    assert not any(line.startswith("    compare:") for line in lines)  # identical parts are not listed
    assert _line(lines, CODING) == f"{CODING}: identical"
    assert _line(lines, "aggregate") == "aggregate: identical"


def test_zero_tolerance_asks_for_identical_results(tmp_path, capsys) -> None:
    before, after = _results(), _results()
    after["settings"][PLANNING]["ope"]["awr"]["0"]["wis"] += 2.3e-13
    code, lines = _run(tmp_path, before, after, "--rtol", "0", "--atol", "0", capsys=capsys)
    assert code == 1
    assert _line(lines, PLANNING) == f"{PLANNING}: DIFFERS"
    assert "    ope: DIFFERS" in lines
    assert any(line.startswith("    /ope/awr/0/wis: 0.4321 != 0.43210000000") for line in lines)


def test_a_float_beyond_the_tolerance_differs(tmp_path, capsys) -> None:
    before, after = _results(), _results()
    after["aggregate"]["metrics"]["awr"]["iqm"]["estimate"] = 61.5 * (1 + 1e-6)
    code, lines = _run(tmp_path, before, after, "--rtol", "1e-7", capsys=capsys)
    assert code == 1
    assert _line(lines, "aggregate") == "aggregate: DIFFERS"
    code, lines = _run(tmp_path, before, after, "--rtol", "1e-5", capsys=capsys)
    assert code == 0
    assert _line(lines, "aggregate").startswith("aggregate: equal within tolerance (1 float")


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("compare", "policies", "base", "pairs"), 61),  # an int is a count: no tolerance
        (("buffer", "N"), 600.0000000001),  # int against float: still a number, compared with tolerance
        (("compare", "base"), "awr"),
        (("ope", "awr", "0", "ess"), True),  # a bool is not the number 1
    ],
)
def test_anything_but_close_floats_must_be_identical(tmp_path, capsys, where, value) -> None:
    before, after = _results(), copy.deepcopy(_results())
    node = after["settings"][PLANNING]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    code, lines = _run(tmp_path, before, after, capsys=capsys)
    if isinstance(value, float):
        assert code == 0 and "equal within tolerance" in _line(lines, PLANNING)
    else:
        assert code == 1 and _line(lines, PLANNING) == f"{PLANNING}: DIFFERS"


def test_a_setting_or_key_in_one_run_only_differs(tmp_path, capsys) -> None:
    before, after = _results(), _results()
    del after["settings"][CODING]
    after["settings"][PLANNING]["tokens"] = {}
    code, lines = _run(tmp_path, before, after, capsys=capsys)
    assert code == 1
    assert _line(lines, CODING) == f"{CODING}: DIFFERS (only in the before run)"
    assert "    /tokens: only in one run" in lines


def test_nan_equals_nan() -> None:
    assert compare_results.compare({"x": [float("nan")]}, {"x": [float("nan")]}).verdict == "identical"


def test_an_unreadable_file_is_one_error_line(tmp_path, capsys) -> None:
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SystemExit) as exc:
        compare_results.main([str(tmp_path / "bad.json"), str(tmp_path / "bad.json")])
    assert exc.value.code == 2
    assert "cannot read" in capsys.readouterr().err
