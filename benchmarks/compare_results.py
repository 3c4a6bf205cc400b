"""Two bench runs' ``results.json`` compared as JSON minus timings (and the output directory).

A change meant only to make the bench faster must leave everything else identical: every setting's
results, the aggregate statistics and the configuration. Prints one verdict per section (each setting,
each other top-level key) and, under a setting that is not identical, one per part of it:

- ``identical``: equal bit for bit;
- ``equal within tolerance``: every difference is between two floats with
  ``math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)``; the line gives how many and the largest;
- ``DIFFERS``: anything else (a key, a string, an int or a bool, or a float beyond the tolerance).

Exits 0 when nothing DIFFERS, else 1. The defaults (``--rtol 1e-9 --atol 1e-12``) admit the rounding of
float64 sums done in another order; ``--rtol 0 --atol 0`` asks for identical results.

    python benchmarks/compare_results.py BEFORE/results.json AFTER/results.json [--rtol R] [--atol A]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IGNORED = ("timings",)
"""Keys left out at any depth: how long the phases took."""
RTOL = 1e-9
"""Default relative tolerance on floats."""
ATOL = 1e-12
"""Default absolute tolerance on floats, for values near 0 (e.g. a rounding-error measure)."""
SHOWN = 5
"""Differences listed per section."""


def strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


@dataclass
class Comparison:
    """The differences between two JSON values: ``close`` within tolerance, ``apart`` beyond it."""

    close: list[tuple[str, float, float]] = field(default_factory=list)
    apart: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.apart:
            return "DIFFERS"
        return "equal within tolerance" if self.close else "identical"

    def summary(self) -> str:
        if self.verdict != "equal within tolerance":
            return self.verdict
        diff = max(abs(a - b) for _, a, b in self.close)
        rel = max(abs(a - b) / max(abs(a), abs(b)) for _, a, b in self.close)
        n = len(self.close)
        return f"equal within tolerance ({n} float{'s' * (n != 1)}, max |diff| {diff:.2g}, max rel {rel:.2g})"


def _is_float_pair(a: Any, b: Any) -> bool:
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
    return numbers and (isinstance(a, float) or isinstance(b, float))


def compare(a: Any, b: Any, rtol: float = RTOL, atol: float = ATOL, path: str = "") -> Comparison:
    """Every differing leaf of ``a`` and ``b`` (and every key in one only), sorted by tolerance."""
    out = Comparison()
    if isinstance(a, dict) and isinstance(b, dict):
        out.apart += [f"{path}/{k}: only in one run" for k in sorted(a.keys() ^ b.keys())]
        for k in sorted(a.keys() & b.keys()):
            sub = compare(a[k], b[k], rtol, atol, f"{path}/{k}")
            out.close += sub.close
            out.apart += sub.apart
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            sub = compare(x, y, rtol, atol, f"{path}[{i}]")
            out.close += sub.close
            out.apart += sub.apart
    elif _is_float_pair(a, b):
        if a == b or (math.isnan(a) and math.isnan(b)):
            pass
        elif math.isclose(a, b, rel_tol=rtol, abs_tol=atol):
            out.close.append((path, float(a), float(b)))
        else:
            out.apart.append(f"{path}: {a!r} != {b!r}")
    elif type(a) is not type(b) or a != b:
        out.apart.append(f"{path}: {str(a)[:60]} != {str(b)[:60]}")
    return out


def sections(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, bool, Any, Any]]:
    """(name, is a setting, before, after): each setting, then each other top-level key."""
    settings = [before.get("settings") or {}, after.get("settings") or {}]
    names = dict.fromkeys([*settings[0], *settings[1]])
    out = [(env_id, True, settings[0].get(env_id), settings[1].get(env_id)) for env_id in names]
    keys = sorted((set(before) | set(after)) - {"settings"})
    return out + [(key, False, before.get(key), after.get(key)) for key in keys]


def report(
    before: dict[str, Any], after: dict[str, Any], rtol: float = RTOL, atol: float = ATOL
) -> tuple[list[str], bool]:
    """The printed lines and whether the runs agree (nothing DIFFERS)."""
    runs = [strip(run) for run in (before, after)]
    for run in runs:
        (run.get("config") or {}).pop("out", None)
    lines = [f"tolerance on floats: rtol {rtol:g}, atol {atol:g}; everything else must be identical"]
    agree = True
    for name, is_setting, a, b in sections(*runs):
        if (a is None) != (b is None):
            agree = False
            lines.append(f"{name}: DIFFERS (only in the {'after' if a is None else 'before'} run)")
            continue
        result = compare(a, b, rtol, atol)
        agree &= not result.apart
        lines.append(f"{name}: {result.summary()}")
        if result.verdict == "identical":
            continue
        if is_setting and isinstance(a, dict) and isinstance(b, dict):
            for part in sorted(set(a) | set(b)):
                sub = compare(a.get(part), b.get(part), rtol, atol)
                if sub.verdict != "identical":
                    lines.append(f"    {part}: {sub.summary()}")
        lines += [f"    {line}" for line in result.apart[:SHOWN]]
    return lines, agree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument(
        "--rtol", type=float, default=RTOL, help=f"relative tolerance on floats (default {RTOL:g})"
    )
    parser.add_argument(
        "--atol", type=float, default=ATOL, help=f"absolute tolerance on floats (default {ATOL:g})"
    )
    args = parser.parse_args(argv)
    if args.rtol < 0 or args.atol < 0:
        parser.error("--rtol and --atol must be >= 0")
    runs = []
    for path in (args.before, args.after):
        try:
            runs.append(json.loads(Path(path).read_text()))
        except (OSError, ValueError) as exc:
            parser.error(f"cannot read {path}: {exc}")
    lines, agree = report(*runs, rtol=args.rtol, atol=args.atol)
    print("\n".join(lines))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
