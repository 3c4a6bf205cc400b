"""a static HTML page of episodes: results dir, episodes file or dataset

``harness-gym view``: ``harness_gym.bench.viewer.write_view`` from the command line; the page needs no
server.
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import first_line


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("view", help=first_line(__doc__))
    parser.add_argument(
        "target", help="bench results directory, JSONL from 'run --episodes-out', or dataset id"
    )
    parser.add_argument(
        "--out", default=None, help="page to write (default: TARGET/view.html or ./view.html)"
    )
    parser.add_argument(
        "--root", default=None, help="datasets directory for a dataset id (default: Minari's)"
    )
    parser.add_argument("--max-episodes", type=int, default=40, help="episodes shown per setting")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harness_gym.bench.viewer import ViewError, write_view

    out = args.out or (Path(args.target) / "view.html" if Path(args.target).is_dir() else Path("view.html"))
    try:
        path = write_view(args.target, out, root=args.root, limit=args.max_episodes)
    except ViewError as exc:
        raise SystemExit(f"harness-gym view: {exc}") from None
    print(f"wrote {path} (open it in a browser; it needs no server)")
    return 0
