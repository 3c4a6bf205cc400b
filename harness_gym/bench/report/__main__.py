"""Render the report of a finished bench run again from its results.json.

    python -m harness_gym.bench.report RESULTS_JSON [--out DIR] [--no-figures]

Writes report.md, summary.csv, results.json, view.html and the figures under ``--out`` (default: the
directory of RESULTS_JSON). Presentation changes reach an existing run without running the bench again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness_gym.bench.report.document import write_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness_gym.bench.report",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("results", type=Path, help="a bench run's results.json")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: beside RESULTS)")
    parser.add_argument("--no-figures", action="store_true", help="write no figures (no matplotlib needed)")
    args = parser.parse_args(argv)
    try:
        results = json.loads(args.results.read_text())
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read {args.results}: {exc}")
    if not isinstance(results, dict) or "settings" not in results:
        parser.error(f"{args.results} is not a bench results file (no 'settings')")
    paths = write_report(results, args.out or args.results.parent, figures=not args.no_figures)
    print(f"wrote {', '.join(str(path) for path in paths.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
