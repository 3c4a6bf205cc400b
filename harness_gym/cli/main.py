"""The ``harness-gym`` command line: the top-level parser, one subcommand per module, and ``main``.

Each command module (``COMMANDS``, in help order) has ``add_parser(subparsers)``, whose help is the first
line of its docstring, and ``run(args) -> int``. Command modules import only light modules at the top;
torch, d3rlpy, minari, matplotlib and the HTTP client are imported inside ``run``, so ``harness-gym --help``
and ``harness-gym envs`` start fast.

``main``'s contract: a user error (bad file, id or setting) is one line on stderr and exit code 1, never a
traceback; Ctrl-C prints where the command keeps its resumable state (``common.RESUME_HINT``) and exits 130.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harness_gym._version import __version__
from harness_gym.cli import (
    bench,
    calibrate,
    collect,
    datasets,
    doctor,
    envs,
    evaluate,
    headroom,
    leaderboard,
    replay,
    run,
    submit,
    train,
    view,
)
from harness_gym.cli.common import OUTCOMES, RESUME_HINT

COMMANDS = (
    envs,
    run,
    collect,
    datasets,
    train,
    evaluate,
    submit,
    bench,
    leaderboard,
    calibrate,
    replay,
    view,
    headroom,
    doctor,
)
"""The command modules, in the order ``harness-gym --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness-gym", description="Gymnasium environments for learning to control LLM agent harnesses."
    )
    parser.add_argument("--version", action="version", version=__version__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def _user_errors() -> tuple[type[BaseException], ...]:
    """Errors a user causes (bad files, ids, settings): reported in one line, never as a traceback."""
    from harness_gym.core.task import TaskFileError
    from harness_gym.datasets.collect import CollectError
    from harness_gym.datasets.files import DatasetError
    from harness_gym.evaluation.model_files import ModelError
    from harness_gym.evaluation.results import ResultsError
    from harness_gym.executors.cache import CacheError
    from harness_gym.executors.profiles import ProfileError
    from harness_gym.sandbox import SandboxUnavailable

    return (
        CacheError,
        CollectError,
        DatasetError,
        ModelError,
        ProfileError,
        ResultsError,
        SandboxUnavailable,
        TaskFileError,
        OSError,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.parse = parser.parse_args  # for commands that run other commands (replay)
    RESUME_HINT.clear()
    OUTCOMES.clear()
    try:
        return args.func(args)
    except KeyboardInterrupt:
        hint = RESUME_HINT[0] if RESUME_HINT else "nothing to resume"
        sys.stdout.flush()
        print(f"\nharness-gym {args.command}: interrupted; {hint}", file=sys.stderr, flush=True)
        return 130
    except _user_errors() as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"harness-gym {args.command}: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
