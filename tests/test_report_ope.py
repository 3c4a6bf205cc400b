"""The report's off-policy evaluation section, from a results dict whose answers are worked out by hand."""

from __future__ import annotations

import copy
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import require

from harness_gym.bench.report import markdown_tables, ope_errors
from harness_gym.evaluation.paper import PAPER

require("scipy")

PLANNING, TAU = "HarnessPlanning-v0", "HarnessTauRetail-v0"
ROOT = Path(__file__).resolve().parents[1]


def _entry(true: float, is_: float, wis: float | None, **extra: Any) -> dict[str, Any]:
    """FQE = truth + 0.1, DR = truth, PDIS = IS (terminal reward)."""
    entry = {"true": true, "true_se": 0.05, "fqe": true + 0.1, "is": is_, "wis": wis, "pdis": is_, "dr": true}
    return entry | {"own_q": None, "ess": 5.0} | extra


def _results() -> dict[str, Any]:
    # Planning: true seed means p1 0.3 < p2 0.5 < p3 0.8; IS ranks them p1 < p3 < p2 (rho = 0.5);
    # WIS is undefined for p3 and ranks p2 below p1 (rho = -1)
    planning = {
        "p1": {"0": _entry(0.2, 0.3, 0.6), "1": _entry(0.4, 0.3, 0.6)},
        "p2": {"0": _entry(0.5, 0.9, 0.1), "1": _entry(0.5, 0.9, 0.1)},
        "p3": {"0": _entry(0.7, 0.6, None), "1": _entry(0.9, 0.6, None)},
    }
    tau = {
        "bc": {"0": _entry(0.5, 0.5, 0.5)},
        "bcq": {"0": _entry(0.3, 0.0, None, own_q=1.5, ess=0.0)},
    }
    compare = {
        "policies": {
            "bc": {"G": 0.5, "delta_G": 0.0, "ci_low": -0.05, "ci_high": 0.05},
            "bcq": {"G": 0.25, "delta_G": -0.25, "ci_low": -0.3, "ci_high": -0.2},
        }
    }
    return {
        "settings": {
            PLANNING: {"ope": planning, "compare": {"policies": {}}},
            TAU: {"ope": tau, "compare": compare},
        }
    }


def _tables(markdown: str) -> list[list[list[str]]]:
    """Every table of the off-policy evaluation section, as rows of cells (header rows dropped)."""
    section = markdown.split("## Off-policy evaluation\n", 1)[1].split("\n## ", 1)[0]
    tables, current = [], []
    for line in [*section.splitlines(), ""]:
        if line.startswith("|"):
            current.append([c.strip() for c in line.strip("|").split(" | ")])
        elif current:
            tables.append(current[2:])
            current = []
    return tables


def _row(rows: list[list[str]], label: str) -> list[str]:
    return next(r for r in rows if r[0] == label)


def test_errors_and_rank_correlations_by_hand() -> None:
    entries = [
        (n, s, e)
        for n, per_seed in _results()["settings"][PLANNING]["ope"].items()
        for s, e in per_seed.items()
    ]
    fqe = ope_errors(entries, "fqe")
    assert fqe["mae"] == pytest.approx(0.1) and fqe["rho"] == pytest.approx(1.0) and fqe["n"] == 3
    is_ = ope_errors(entries, "is")
    assert is_["mae"] == pytest.approx((0.1 + 0.1 + 0.4 + 0.4 + 0.1 + 0.3) / 6)
    assert is_["rho"] == pytest.approx(0.5)  # 1 - 6 * (0 + 1 + 1) / (3 * (9 - 1))
    wis = ope_errors(entries, "wis")
    assert wis["undefined"] == 2 and wis["n"] == 2
    assert wis["mae"] == pytest.approx((0.4 + 0.2 + 0.4 + 0.4) / 4) and wis["rho"] == pytest.approx(-1.0)
    dr = ope_errors(entries, "dr")
    assert dr["mae"] == pytest.approx(0.0) and dr["rho"] == pytest.approx(1.0)


def test_section_tables() -> None:
    md = markdown_tables(_results())
    mae, by_support, rho, own = _tables(md)
    label = PAPER[PLANNING].label
    # Setting, Runs, FQE, IS, WIS, PDIS, DR, Truth SE, ESS = 0
    assert _row(mae, label) == [
        label,
        "6",
        "0.100",
        "0.233",
        "0.350 (2 undef.)",
        "0.233",
        "0.000",
        "0.050",
        "0/6",
    ]
    assert _row(mae, "Pooled")[1] == "8" and _row(mae, "Pooled")[2] == "0.100"
    assert _row(mae, "Pooled")[-1] == "1/8"
    # Tau's bcq is the one run no logged episode follows: FQE is 0.1 off on it, as everywhere
    assert by_support == [["ESS > 0", "7", "0.100", "0.200", "0.280", "0.200", "0.000"],
                          ["ESS = 0", "1", "0.100", "0.300", "—", "0.300", "0.000"]]  # fmt: skip
    assert _row(rho, label) == [label, "3", "+1.00", "+0.50", "-1.00", "+0.50", "+1.00"]
    # Tau has two policies; its FQE and truth rank them the same way
    assert _row(rho, PAPER[TAU].label)[2] == "+1.00"
    assert _row(rho, "Mean of settings")[2] == "+1.00"
    # only the learner with its own Q-function is in the own-Q table
    assert own == [[PAPER[TAU].label, "bcq", "1.500", "0.300", "+1.200", "0.400", "0.250", "0.500"]]


def test_bcq_below_bc_is_explained_from_its_own_q() -> None:
    md = markdown_tables(_results())
    section = md.split("## Off-policy evaluation\n", 1)[1]
    assert "bcq (eval G 0.250) is below BC (0.500) by 0.250, more than its interval (±0.050)" in section
    assert "overestimates" in section and "own Q 1.500, above 1" in section
    assert "+1.200, 24 standard errors of the truth" in section
    assert "ESS 0 on every seed" in section


def test_bcq_within_its_interval_needs_no_explanation() -> None:
    results = copy.deepcopy(_results())
    results["settings"][TAU]["compare"]["policies"]["bcq"]["G"] = 0.48
    assert "nowhere below BC by more than their interval" in markdown_tables(results)


def test_a_right_q_function_is_said_to_be_right() -> None:
    results = copy.deepcopy(_results())
    results["settings"][TAU]["ope"]["bcq"]["0"]["own_q"] = 0.33  # within two standard errors of 0.3
    assert "a wrong Q-function does not explain the shortfall" in markdown_tables(results)


def test_results_without_ope() -> None:
    assert "_No off-policy evaluation in these results._" in markdown_tables({"settings": {PLANNING: {}}})


STABILITY_SCRIPT = """
import numpy as np
from harness_gym.bench.ope import EpisodeBatch
from harness_gym.evaluation.protocol import finite_buffer_check
rng = np.random.default_rng(7)
for n in (200, 3001, 20000):
    g, adv, psi = rng.random(n), rng.normal(0, 0.1, n), rng.random(n)
    print([repr(v) for v in finite_buffer_check(g, adv, psi, clip=(0.1, 10)).values()])
    steps = n // 4 * 4
    target, logp = rng.random(steps), np.log(rng.uniform(0.2, 1, steps))
    batch = EpisodeBatch.from_rows(np.full(n // 4, 4), target, logp, rng.random(steps))
    print(repr(batch.estimate("wis")))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS core types are x86's")
def test_buffer_checks_and_wis_are_the_same_bits_under_every_blas_kernel_and_thread_count() -> None:
    """A BLAS dot product accumulates in the order of the CPU's OpenBLAS kernel (and splits long vectors
    across threads), so the buffer checks and WIS once differed in the last bits between machines; the
    oldest x86 kernel (Prescott) and one BLAS thread stand in for another machine here."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", STABILITY_SCRIPT],
            env=env | extra,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for extra in ({}, {"OPENBLAS_CORETYPE": "Prescott"}, {"OPENBLAS_NUM_THREADS": "1"})
    ]
    assert runs[0] and runs[1] == runs[0] and runs[2] == runs[0]
