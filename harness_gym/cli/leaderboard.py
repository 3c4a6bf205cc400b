"""rank the policies of results files (the bench's results.json, evaluate --results-out) in one table

``harness-gym leaderboard FILE...``: ``harness_gym.bench.leaderboard`` from the command line. Files that
share the protocol and simulator versions are merged (any other is refused in one line) and the ranking is
recomputed from their per-seed and per-episode scores: IQM with bootstrap intervals, probability of
improvement over Base and over the best, and the figures. It prints the table; ``--out DIR`` also writes
leaderboard.md, the merged results.json and the figures there.
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import first_line


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("leaderboard", help=first_line(__doc__))
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="results files (schema harness-gym-results-v1)"
    )
    parser.add_argument(
        "--out", default=None, help="directory for leaderboard.md, the merged results.json and the figures"
    )
    parser.add_argument(
        "--reps",
        type=int,
        default=None,
        help="bootstrap replications of every interval (default: the bench's, 2000)",
    )
    parser.add_argument(
        "--missing",
        default="drop-policy",
        choices=["drop-policy", "drop-setting"],
        help="a policy without scores on every setting: left out of the ranking (default), or the "
        "ranking keeps only the settings every policy has",
    )
    parser.add_argument("--no-figures", action="store_true", help="write no figures (no matplotlib needed)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness_gym.bench.leaderboard import leaderboard, markdown, write_leaderboard

    if args.reps is not None and args.reps < 1:
        raise SystemExit(f"harness-gym leaderboard: --reps must be at least 1, got {args.reps}")
    if args.out:
        check_writable(args.out)
    # a file that cannot be merged raises ResultsError: one line on stderr (``main``)
    doc = leaderboard(args.files, args.reps, args.reps, args.missing)
    print(markdown(doc, args.files), end="")
    if args.out:
        paths = write_leaderboard(doc, args.out, args.files, figures=not args.no_figures)
        print(f"wrote {', '.join(str(path) for path in paths.values())}")
    return 0


def check_writable(out: str) -> None:
    """Refuse (one line) an ``--out`` that cannot become a writable directory, before any computing;
    nothing is created: the nearest existing directory on its path is probed with a temporary file."""
    import tempfile
    from pathlib import Path

    path = Path(out).absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        what = "is a file" if existing == path else f"is under {existing}, which is a file"
        raise SystemExit(f"harness-gym leaderboard: --out {out} {what}, not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise SystemExit(
            f"harness-gym leaderboard: --out {out} is not writable ({existing}: {exc.strerror or exc})"
        ) from None
