"""Two bench runs' ``results.json`` compared as JSON minus timings (and the output directory).

A change meant only to make the bench faster must leave everything else identical: every setting's
results, the aggregate statistics and the configuration. Prints one line per setting and per other
section; exits 1 when anything differs.

    python benchmarks/compare_results.py BEFORE/results.json AFTER/results.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

IGNORED = ("timings",)
"""Keys left out at any depth: how long the phases took."""


def strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def differing(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths of the first differences (one per differing leaf or key set, at most a few per branch)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in one run" for k in sorted(a.keys() ^ b.keys())]
        for k in a.keys() & b.keys():
            out += differing(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differing(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:60]} != {str(b)[:60]}"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args()
    runs = [strip(json.loads(Path(path).read_text())) for path in (args.before, args.after)]
    for run in runs:
        run.get("config", {}).pop("out", None)
    same = True
    sections = [("settings", env_id) for env_id in runs[1].get("settings", {})]
    sections += [(key, None) for key in sorted(set(runs[0]) | set(runs[1])) if key != "settings"]
    for key, sub in sections:
        a, b = runs[0].get(key), runs[1].get(key)
        if sub is not None:
            a, b = (a or {}).get(sub), (b or {}).get(sub)
        diffs = differing(a, b)
        same &= not diffs
        print(f"{sub or key}: {'identical' if not diffs else 'DIFFERS'}")
        for line in diffs[:5]:
            print(f"    {line}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
