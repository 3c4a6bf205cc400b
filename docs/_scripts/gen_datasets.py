"""Put the published buffers' cards into the site: ``datasets/*.md`` -> ``docs/datasets/published/``.

Run by ``docs/conf.py`` on every build, in the manner of Minari's ``docs/_scripts/gen_dataset_md.py``.
The cards and their index (``datasets/README.md``) are written by ``datasets/build.py`` from the datasets
themselves; this copies them unchanged (the index becomes ``published/index.md``), so the site shows
exactly what the repository holds and nothing is edited by hand.

    python docs/_scripts/gen_datasets.py [OUT_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "datasets" / "published"


def main(out: Path = OUT) -> list[Path]:
    """Copy the index and every card into ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sorted((ROOT / "datasets").glob("*.md")):
        path = out / ("index.md" if source.name == "README.md" else source.name)
        text = source.read_text()
        if not path.exists() or path.read_text() != text:  # unchanged pages keep their time stamp
            path.write_text(text)
        written.append(path)
    return written


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(path)
