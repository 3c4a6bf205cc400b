"""DB-Bench on a real server (engine="mysql"): AgentBench's hash computed by MariaDB, episodes, errors.

A private MariaDB server is started on loopback for the session; without a server binary the server
tests skip (they fail under ``CI=true``, where mariadb-server is installed).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from conftest import require, unavailable
from upstream import dbbench_records

import harness_gym  # noqa: F401  (registers the environments)
from harness_gym.core.actions import Action
from harness_gym.domains.dbbench import DBBenchDomain, HarnessDBBenchEnv
from harness_gym.domains.dbbench.engine import _open, columns_of, quote_ident, table_hash
from harness_gym.domains.dbbench.mysql_engine import DSN, MySQLEngine

HASH_EXCEPTIONS = {225}
"""standard.jsonl line 226: the shipped ``answer_md5`` matches neither the updated nor the initial table
(the same exception as the SQLite engine's, see test_dbbench_content.py)."""
START_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def mysql_dsn() -> Iterator[str]:
    """A throwaway MariaDB server on loopback (root, no password), killed at teardown."""
    require("pymysql")
    server = shutil.which("mariadbd") or shutil.which("mysqld")
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    if server is None or install is None:
        unavailable("no mariadbd/mysqld + mariadb-install-db on PATH (Debian package mariadb-server)")
    root = Path(tempfile.mkdtemp(prefix="hg-mariadb-"))
    as_root = ["--user=root"] if os.geteuid() == 0 else []
    datadir = root / "data"
    subprocess.run(
        [install, "--no-defaults", f"--datadir={datadir}", "--auth-root-authentication-method=normal",
         "--skip-test-db", *as_root],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    port = _free_port()
    log = (root / "server.log").open("wb")
    proc = subprocess.Popen(
        [server, "--no-defaults", f"--datadir={datadir}", f"--socket={root / 'sock'}", f"--port={port}",
         "--bind-address=127.0.0.1", "--skip-networking=0", "--innodb-flush-log-at-trx-commit=0",
         f"--pid-file={root / 'pid'}", *as_root],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    dsn = f"mysql://root:@127.0.0.1:{port}/"
    try:
        import pymysql

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                pymysql.connect(host="127.0.0.1", port=port, user="root", connect_timeout=1).close()
                break
            except pymysql.err.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    text = (root / "server.log").read_text(errors="replace")[-2000:]
                    pytest.fail(f"MariaDB did not accept connections on port {port}:\n{text}")
                time.sleep(0.1)
        yield dsn
    finally:
        proc.kill()
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def server(mysql_dsn: str) -> Iterator[MySQLEngine]:
    engine = MySQLEngine(mysql_dsn)
    yield engine
    engine.close()


def _episode_databases(dsn: str) -> list[str]:
    """Episode databases on the server, seen from a separate connection."""
    import pymysql

    where = DSN.parse(dsn)
    conn = pymysql.connect(host=where.host, port=where.port, user=where.user, password=where.password)
    try:
        with conn.cursor() as cur:
            cur.execute(r"SHOW DATABASES LIKE 'hg\_%'")
            return [row[0] for row in cur.fetchall()]
    finally:
        conn.close()


def _python_hash(record: dict[str, Any], rows: list[tuple[Any, ...]]) -> str:
    """verifier.py's (Python) table hash of the given rows, through a SQLite copy of them."""
    conn = _open()
    cols, name = columns_of(record), quote_ident(record["table"]["table_name"])
    conn.execute(f"CREATE TABLE {name} ({', '.join(quote_ident(c) + ' TEXT' for c in cols)})")
    conn.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in cols)})", rows)
    return table_hash(record, conn)


# -- configuration errors (no server needed) -------------------------------------------------------------
def test_unknown_engine_and_dsn_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_GYM_MYSQL_DSN", raising=False)
    with pytest.raises(ValueError, match="unknown DB-Bench engine 'postgres'"):
        DBBenchDomain(engine="postgres")
    with pytest.raises(ValueError, match="HARNESS_GYM_MYSQL_DSN"):
        DBBenchDomain(engine="mysql")
    with pytest.raises(ValueError, match='only used with engine="mysql"'):
        DBBenchDomain(dsn="mysql://root@127.0.0.1/")
    for bad, why in [
        ("", "empty"),
        ("   ", "empty"),
        ("postgres://u@h/", "scheme"),
        ("mysql://u@/", "no host"),
        ("mysql://u@h:notaport/", "Port"),
        ("mysql://u:secret@h:3306/somedb", "no database"),
        ("mysql://h:3306/", "no user"),
    ]:
        with pytest.raises(ValueError, match=why) as info:
            DSN.parse(bad)
        assert "secret" not in str(info.value)
    assert DSN.parse("mysql://a%40b:p%2Fw@db.local:3307/") == DSN("db.local", 3307, "a@b", "p/w")


def test_unreachable_server_names_host_and_port(monkeypatch: pytest.MonkeyPatch) -> None:
    require("pymysql")
    port = _free_port()  # nothing listens there once the probe socket is closed
    monkeypatch.setenv("HARNESS_GYM_MYSQL_DSN", f"mysql://root@127.0.0.1:{port}/")
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}"):
        gym.make("HarnessDBBench-v0", engine="mysql")


def test_a_missing_pymysql_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymysql", None)  # as if PyMySQL were not installed
    with pytest.raises(ImportError, match=r'pip install "harness-gym\[mysql\]"'):
        MySQLEngine("mysql://root@127.0.0.1:1/")


def test_import_does_not_load_pymysql() -> None:
    code = "import sys, harness_gym, harness_gym.domains.dbbench; print('pymysql' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- upstream data on the real server --------------------------------------------------------------------
def test_upstream_gold_sql_reproduces_answer_md5_on_the_server(server: MySQLEngine) -> None:
    records = dbbench_records("standard.jsonl")
    modify = [i for i, r in enumerate(records) if r["type"][0] in ("INSERT", "UPDATE")]
    assert len(modify) == 200
    mismatches, cross = [], []
    for i in modify:
        record = records[i]
        server.bind(object())
        execution, rows = server.run_and_snapshot(record, record["label"][0])
        assert execution.ok and rows is not None, (i, execution.error)
        if execution.table_hash != record["answer_md5"]:
            mismatches.append(i)
        if _python_hash(record, rows) != execution.table_hash:
            cross.append(i)
    server.end_episode()
    assert set(mismatches) == HASH_EXCEPTIONS, mismatches
    assert len(modify) - len(mismatches) >= 195
    assert cross == [], f"server hash != verifier.py hash for records {cross}"


# -- engine behaviour ------------------------------------------------------------------------------------
def _record(rows: list[list[Any]], kind: str = "UPDATE", **extra: Any) -> dict[str, Any]:
    cols = ("Name", "Score 100%")
    return {
        "table": {
            "table_name": "scores",
            "table_info": {"columns": [{"name": c, "type": "TEXT"} for c in cols], "rows": rows},
        },
        "type": [kind],
        "label": [],
        **extra,
    }


def test_each_statement_sees_the_original_table_and_unsafe_kinds_are_refused(server: MySQLEngine) -> None:
    record = _record([["José\xa0Pérez", 1.5], ["ana", None]])
    server.bind(object())
    assert server.run_sql(record, "DELETE FROM scores").changes == 2
    assert server.run_sql(record, "SELECT COUNT(*) FROM scores").rows == ((2,),)
    assert server.run_sql(record, "SELECT `Score 100%` FROM scores WHERE Name = 'ANA'").rows == ((None,),)
    assert server.run_sql(record, "SELECT Name FROM scores WHERE `Score 100%` = '1.5'").rows == (
        ("José\xa0Pérez",),
    )
    for sql in ("DROP TABLE scores", "SET GLOBAL max_connections = 1", "SELECT 1 INTO OUTFILE '/tmp/x'"):
        result = server.run_sql(record, sql)
        assert not result.ok and "not allowed" in (result.error or ""), sql
    bad = server.run_sql(record, "SELECT * FORM scores")
    assert not bad.ok and "syntax" in (bad.error or "")
    server.time_limit, saved = 0.2, server.time_limit
    try:
        slow = server.run_sql(record, "SELECT SLEEP(3)", time_limit=0.2)
    finally:
        server.time_limit = saved
    assert not slow.ok or slow.rows == ((1,),)  # MariaDB interrupts; SLEEP then returns 1
    # a statement that works until stopped (a 10^12-row join of MariaDB sequence tables): the limit takes
    # effect and is reported as such
    endless = "SELECT SUM(a.seq * b.seq) FROM seq_1_to_1000000 a, seq_1_to_1000000 b"
    stopped = server.run_sql(record, endless, time_limit=server.time_limit)
    assert (stopped.ok, stopped.error) == (False, "query interrupted (time limit)")
    assert server.run_sql(record, "SELECT COUNT(*) FROM scores").rows == ((2,),)
    server.end_episode()


def test_episode_scores_reference_insert_and_not_a_flawed_one(mysql_dsn: str) -> None:
    env = gym.make("HarnessDBBench-v0", engine="mysql", dsn=mysql_dsn, split="all")
    inner: HarnessDBBenchEnv = env.unwrapped  # type: ignore[assignment]
    domain = inner.domain
    assert domain.mysql is not None
    task = next(t for t in inner.tasks if t.payload["record"]["type"][0] == "INSERT")
    record, reference = task.payload["record"], task.payload["reference"]
    flawed = next(p["source"] for p in task.payload["pool"] if p["flaw"] == "wrong_filter")
    env.reset(seed=0, options={"task_id": task.task_id})
    ep = inner._ep
    assert ep is not None
    assert domain.score(ep, reference).signals["native_score"] == 1.0
    assert domain.score(ep, flawed).signals["native_score"] == 0.0
    first = domain.mysql.database
    assert first in _episode_databases(mysql_dsn)
    before = domain.mysql.run_sql(record, reference)
    assert before.table_hash == record["answer_md5"]

    obs, info = env.reset(seed=1, options={"task_id": task.task_id})
    done, used = False, set()
    while not done:
        action = DBBenchDomain.base_action(obs, info["action_mask"])
        obs, _, term, trunc, info = env.step(action)
        used.add(domain.mysql.database)
        done = term or trunc
    assert info["rubric"]["correctness"][0] in (0.0, 0.6)
    used.discard(None)
    assert used and first not in used  # a new database for the new episode
    assert not (used | {first}) & set(_episode_databases(mysql_dsn))  # dropped at episode end
    env.reset(seed=2, options={"task_id": task.task_id})
    env.step(int(Action.CALL_TOOL))  # may come from VERIFIER_CACHE: force the database into being
    assert domain.mysql.run_sql(
        record, "SELECT COUNT(*) FROM " + quote_ident(record["table"]["table_name"])
    ).ok
    last = domain.mysql.database
    assert last in _episode_databases(mysql_dsn)
    engine = domain.mysql
    env.close()
    assert last not in _episode_databases(mysql_dsn)  # dropped at close
    assert engine._conn is None


def test_binary_results_read_as_text_and_an_unexpected_error_is_named(server: MySQLEngine) -> None:
    record = _record([["ana", 1], ["bo", 2]])
    server.bind(object())
    assert server.run_sql(record, "SELECT BINARY Name FROM scores ORDER BY Name").rows == (("ana",), ("bo",))
    unknown = server.run_sql(record, "UPDATE scores SET nosuch = 1")
    assert not unknown.ok and "Unknown column 'nosuch'" in (unknown.error or "")
    assert server.run_sql(record, "SELECT COUNT(*) FROM scores").rows == ((2,),)
    server.end_episode()


def _kill(dsn: str, connection_id: int) -> None:
    import pymysql

    where = DSN.parse(dsn)
    conn = pymysql.connect(host=where.host, port=where.port, user=where.user, password=where.password)
    try:
        with conn.cursor() as cur:
            cur.execute(f"KILL CONNECTION {int(connection_id)}")
    finally:
        conn.close()


def _kill_when_running(dsn: str, connection_id: int, started: list[bool]) -> None:
    """Kill the connection once the server shows it running a statement (polled, at most 30 s)."""
    import pymysql

    where = DSN.parse(dsn)
    conn = pymysql.connect(host=where.host, port=where.port, user=where.user, password=where.password)
    try:
        with conn.cursor() as cur:
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline:
                cur.execute(
                    "SELECT COUNT(*) FROM information_schema.processlist WHERE id = %s AND info LIKE %s",
                    (connection_id, "SELECT SLEEP%"),
                )
                if cur.fetchone()[0]:
                    started.append(True)
                    cur.execute(f"KILL CONNECTION {int(connection_id)}")
                    return
                time.sleep(0.05)
    finally:
        conn.close()


def test_a_lost_connection_is_named_and_the_next_statement_reconnects(mysql_dsn: str) -> None:
    """The server drops the engine's connection, while idle or during a statement: the statement under
    way fails naming the lost connection, the next one reconnects, reloads the table and runs."""
    import threading

    engine = MySQLEngine(mysql_dsn)
    record = _record([["ana", 1], ["bo", 2]])
    try:
        engine.bind(object())
        assert engine.run_sql(record, "DELETE FROM scores").changes == 2
        [(first,)] = engine.run_sql(record, "SELECT CONNECTION_ID()").rows
        database = engine.database
        _kill(mysql_dsn, first)  # while idle
        [(count, second)] = engine.run_sql(record, "SELECT COUNT(*), CONNECTION_ID() FROM scores").rows
        assert (count, engine.database) == (2, database) and second != first
        started: list[bool] = []
        killer = threading.Thread(target=_kill_when_running, args=(mysql_dsn, second, started))
        killer.start()
        lost = engine.run_sql(record, "SELECT SLEEP(20)", time_limit=60)  # during a statement
        killer.join()
        assert started and not lost.ok and "Lost connection" in (lost.error or ""), lost
        [(count, third)] = engine.run_sql(record, "SELECT COUNT(*), CONNECTION_ID() FROM scores").rows
        assert count == 2 and third not in (first, second)
    finally:
        engine.close()
    assert database not in _episode_databases(mysql_dsn)
