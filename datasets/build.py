"""Build the published tiers, then write their manifest, cards, index and the README's dataset table.

Every tier of every setting (``harness_gym.datasets.tiers``) is collected under ``--root`` (Minari's datasets
directory by default), its manifest entry computed from the written copy alone, and ``datasets/MANIFEST.json``
rewritten; then the cards (``datasets/<domain>-<tier>-v0.md``), their index (``datasets/README.md``) and the
README's table are generated from the manifest. Deterministic: the same code gives the same manifest, byte
for byte, for any ``--workers``; nothing written depends on the machine or the time.

    python datasets/build.py [--root DIR] [--workers 2] [--only planning coding] [--tiers medium coverage]
    python datasets/build.py --docs-only      # regenerate cards, index and README table from the manifest
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.datasets import cards, manifest, tiers

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "MANIFEST.json"
README = HERE.parent / "README.md"


def documents(entries: Mapping[str, Mapping[str, Any]]) -> dict[Path, str]:
    """Every file generated from the manifest: path -> text."""
    out = {HERE / cards.card_name(dataset_id): cards.card(dataset_id, e) for dataset_id, e in entries.items()}
    out[HERE / "README.md"] = cards.index(entries)
    out[README] = cards.replace_readme_table(README.read_text(), entries)
    return out


def write_documents(entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Write ``documents`` and remove cards of ids no longer in the manifest."""
    written = documents(entries)
    for path, text in written.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    for stale in HERE.glob("*-v[0-9]*.md"):
        if stale not in written:
            stale.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="domain names to build (default: all)")
    parser.add_argument("--tiers", nargs="*", default=None, choices=list(tiers.TIERS), help="default: all")
    parser.add_argument("--docs-only", action="store_true", help="only regenerate the documents")
    args = parser.parse_args()
    entries = manifest.load(MANIFEST) if MANIFEST.exists() else {}
    if not args.docs_only:
        by_domain = tiers.domains()
        unknown = sorted(set(args.only or ()) - set(by_domain))
        if unknown:
            raise SystemExit(f"unknown domain(s) {unknown}; known: {', '.join(by_domain)}")
        for domain, env_id in by_domain.items():
            if args.only and domain not in args.only:
                continue
            for tier in args.tiers or tiers.TIERS:
                start = time.perf_counter()
                report = tiers.build(env_id, tier, root=args.root, workers=args.workers)
                dataset_id = report.dataset_id
                entries[dataset_id] = manifest.entry(dataset_id, args.root)
                MANIFEST.write_text(manifest.dumps(entries))
                e = entries[dataset_id]
                print(
                    f"{dataset_id}: {e['episodes']} episodes, {e['steps']} steps, mean G {e['mean_G']:.3f}, "
                    f"{e['size_bytes'] / 1e6:.1f} MB, sha256 {e['sha256'][:12]} "
                    f"({time.perf_counter() - start:.1f}s)",
                    flush=True,
                )
    write_documents(manifest.load(MANIFEST) if MANIFEST.exists() else entries)  # as read back from the file


if __name__ == "__main__":
    main()
