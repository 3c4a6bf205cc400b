"""One-off conversion of the committed real-model fixture to response-cache version 2, no model needed.

Version 2 leaves the endpoint's URL out of the cache key. This rewrites ``tests/data/smollm2_cache.sqlite``
in place: ``harness_gym.executors.cache.upgrade`` recomputes every key from the request stored with it
(and adds the newer columns and tables), then the episodes of ``tests/data/smollm2_expected.json`` are
kept in its ``runs`` table as the ``harness-gym run`` commands that play them (``run.record_runs``), so
``harness-gym replay tests/data/smollm2_cache.sqlite`` replays and checks the whole fixture. Rerunning it
changes nothing but the runs' timestamps (runs already recorded are replaced). A fixture recorded anew by
``RECORD_FIXTURE=1 bash benchmarks/real_llm/run.sh`` is version 2 already.

    python benchmarks/real_llm/migrate_fixture.py [CACHE] [EXPECTED]
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from harness_gym.executors.cache import upgrade
from harness_gym.executors.openai_executor import OpenAIConfig

sys.path.insert(0, str(Path(__file__).parent))
from run import record_runs

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"


def main() -> None:
    cache = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA / "smollm2_cache.sqlite"
    expected_file = Path(sys.argv[2]) if len(sys.argv) > 2 else DATA / "smollm2_expected.json"
    expected = json.loads(expected_file.read_text())
    rows = upgrade(cache)
    conn = sqlite3.connect(cache)
    with conn:
        conn.execute("DELETE FROM runs")
        conn.execute("DELETE FROM settings")
    conn.close()
    config = OpenAIConfig(
        model=expected["model"],
        base_url=expected["base_url"],
        max_tokens=expected["max_tokens"],
        context_tokens=expected.get("context_tokens"),
    )
    runs = record_runs(str(cache), config, expected["episodes"])
    conn = sqlite3.connect(cache)  # one self-contained file, as run.sh leaves it
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("VACUUM")
    conn.close()
    print(f"{cache}: {rows} responses under version-2 keys, {runs} recorded runs")


if __name__ == "__main__":
    main()
