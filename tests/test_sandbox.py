"""Containment and normal-operation tests for ``harness_gym.sandbox``.

Each containment test attacks from inside the sandbox and then checks the effect from outside (file not
created, process gone, secret absent), so a hook that silently stopped working would fail the test.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import sys
import sysconfig
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from harness_gym.sandbox import SandboxLimits, SandboxResult, boundary, run_python
from harness_gym.sandbox import runner as sandbox
from harness_gym.sandbox.detect import wanted

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux only")

BOUNDARY = wanted() == "namespaces"
"""The operating-system boundary is in force (else ``HARNESS_GYM_SANDBOX=process``: the in-process layer)."""

# Roomy limits for tests that are not about time, so that a heavily loaded CI machine cannot make them flaky.
ROOMY = SandboxLimits(wall_time_s=30.0, cpu_time_s=30)


def run(source: str, **kwargs) -> SandboxResult:
    kwargs.setdefault("limits", ROOMY)
    return run_python(textwrap.dedent(source), **kwargs)


def roomy(**changes) -> SandboxLimits:
    return dataclasses.replace(ROOMY, **changes)


def _alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (an unreaped orphan holds no resources)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _wait_dead(pids: list[int], timeout: float = 3.0) -> list[int]:
    """SIGKILL delivery is asynchronous for processes that are not our children; allow a moment."""
    end = time.monotonic() + timeout
    while True:
        living = [pid for pid in pids if _alive(pid)]
        if not living or time.monotonic() > end:
            return living
        time.sleep(0.02)


def _wait_gone(find, timeout: float = 10.0) -> list[int]:
    end = time.monotonic() + timeout
    while (living := find()) and time.monotonic() < end:
        time.sleep(0.05)
    return living


def _group_members(pgid: int) -> list[int]:
    """Live processes whose process group is `pgid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


# --- normal operation -------------------------------------------------------------------------------------


def test_stdout_is_captured() -> None:
    result = run("print('hello'); print('wörld')")
    untimed = dataclasses.replace(result, duration_s=0.0)  # the time it took is not the behaviour checked
    assert untimed == SandboxResult(0, "hello\nwörld\n", "", False, False, 0.0)
    assert result.ok


def test_stdin_is_passed() -> None:
    result = run(
        """
        import sys
        first = input()
        rest = sys.stdin.read()
        print(first.upper(), len(rest.splitlines()))
        """,
        stdin="héllo\n" + "line\n" * 50_000,
    )
    assert result.ok, result.stderr
    assert result.stdout == "HÉLLO 50000\n"


def test_files_are_placed_readable_and_importable() -> None:
    files = {"data.txt": "abc\n", "helper.py": "def answer():\n    return 42\n", "sub/dir/x.txt": "deep"}
    result = run(
        """
        import helper
        print(open('data.txt').read().strip(), helper.answer(), open('sub/dir/x.txt').read())
        """,
        files=files,
    )
    assert result.ok, result.stderr
    assert result.stdout == "abc 42 deep\n"


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "", "a/../../b"])
def test_file_names_outside_the_directory_are_rejected(name: str) -> None:
    with pytest.raises(ValueError):
        run_python("pass", files={name: "x"})


def test_exit_code_propagates() -> None:
    assert run("import sys; sys.exit(3)").returncode == 3
    assert run("exit(4)").returncode == 4  # site's exit() is provided although site is not loaded
    result = run("import sys; sys.exit(3)")
    assert not result.ok and not result.timed_out


def test_exception_gives_rc_1_and_readable_traceback() -> None:
    result = run(
        """
        def solve():
            raise ValueError("boom")
        solve()
        """
    )
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert 'File "<solution>", line 3, in solve' in result.stderr
    assert 'raise ValueError("boom")' in result.stderr  # source line shown
    assert result.stderr.rstrip().endswith("ValueError: boom")
    assert "<string>" not in result.stderr  # no bootstrap or hook frames


def test_syntax_error_gives_rc_1() -> None:
    result = run("def f(:\n    pass\n")
    assert result.returncode == 1
    assert "SyntaxError" in result.stderr and "<solution>" in result.stderr


def test_user_globals_hold_nothing_from_the_bootstrap() -> None:
    result = run(
        """
        names = sorted(globals())
        import pickle, sys
        class Point:
            pass
        restored = pickle.loads(pickle.dumps(Point()))
        print(names)
        print(__name__, type(restored).__name__, sys.modules['__main__'].Point is Point, sys.argv)
        """
    )
    assert result.ok, result.stderr
    names, rest = result.stdout.splitlines()
    dunders = ["__builtins__", "__doc__", "__file__", "__loader__", "__name__", "__package__", "__spec__"]
    assert names == str(dunders)
    assert rest == "__main__ Point True ['<solution>']"


def test_ordinary_stdlib_use_inside_the_directory_works() -> None:
    """Guards against the hook or the limits over-blocking ordinary solutions."""
    result = run(
        """
        import asyncio, concurrent.futures, os, pathlib, shutil, sqlite3, tempfile, threading
        pathlib.Path('out.txt').write_text('x')
        os.makedirs('a/b'); os.rename('out.txt', 'a/b/moved.txt'); shutil.copy('a/b/moved.txt', 'copy.txt')
        os.symlink('copy.txt', 'link.txt'); open('link.txt', 'a').write('y')
        with tempfile.TemporaryDirectory() as tmp:
            open(os.path.join(tmp, 'f'), 'w').write('z')
        shutil.rmtree('a')
        db = sqlite3.connect('local.db'); db.execute('create table t (x)'); db.close()
        mem = sqlite3.connect(':memory:'); mem.close()
        async def main():
            await asyncio.sleep(0)
            return 'async'
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            total = sum(pool.map(lambda x: x * x, range(100)))
        print(open('copy.txt').read(), asyncio.run(main()), total, sorted(os.listdir('.')))
        """
    )
    assert result.ok, result.stderr
    assert result.stdout == "xy async 328350 ['copy.txt', 'link.txt', 'local.db']\n"


def test_hash_seed_is_fixed() -> None:
    """PYTHONHASHSEED=0 takes effect, so set iteration order is reproducible across runs."""
    first = run("print(hash('harness'), list({'a', 'b', 'c', 'd'}))")
    second = run("print(hash('harness'), list({'a', 'b', 'c', 'd'}))")
    assert first.ok and first.stdout == second.stdout


def test_result_ok_property() -> None:
    assert SandboxResult(0, "", "", False, False, 0.1).ok
    assert not SandboxResult(0, "", "", True, False, 0.1).ok
    assert not SandboxResult(1, "", "", False, False, 0.1).ok
    assert not SandboxResult(None, "", "", True, False, 0.1).ok


@pytest.mark.parametrize(
    "kwargs", [{"wall_time_s": 0}, {"cpu_time_s": 0}, {"memory_bytes": 0}, {"output_bytes": -1}]
)
def test_invalid_limits_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SandboxLimits(**kwargs)


def test_concurrent_runs_do_not_interfere() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def one(n: int) -> SandboxResult:
        return run_python("import sys\nprint(int(sys.stdin.read()) ** 2)", stdin=str(n), limits=ROOMY)

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(one, range(12)))
    assert [r.stdout for r in results] == [f"{n * n}\n" for n in range(12)]


def test_works_without_pidfd_support(monkeypatch: pytest.MonkeyPatch) -> None:
    """Older kernels lack pidfd_open; the supervisor then polls."""
    monkeypatch.setattr(sandbox, "_pidfd_open", lambda pid: None)
    assert run("print('polled')").stdout == "polled\n"
    looping = run("while True:\n    pass\n", limits=SandboxLimits(wall_time_s=0.5))
    assert looping.timed_out


# --- time -------------------------------------------------------------------------------------------------


def _marked_sleeper(marker: str) -> str:
    """Code that replaces a forked child by a sleeping interpreter whose command line carries ``marker``
    (so that it can be found from outside, where a sandbox's own PIDs mean nothing) and waits until it
    runs."""
    return f"""
        import os, sys, time
        child = os.fork()
        if child == 0:
            os.execv(sys.executable, [sys.executable, '-S', '-c',
                     "open('started', 'w').close(); import time; time.sleep(60)", {marker!r}])
        while not os.path.exists('started'):
            time.sleep(0.01)
        print(os.getpid(), child, flush=True)
        """


def _marked(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker``."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes() and _alive(int(entry)):
                found.append(int(entry))
        except OSError:
            continue
    return found


def test_infinite_loop_times_out_and_process_group_is_killed() -> None:
    """The grandchild proves the whole group is killed, not just the process we started."""
    marker = f"harness-sandbox-test-{uuid.uuid4().hex}"
    limits = SandboxLimits(wall_time_s=2.0, cpu_time_s=60, max_processes=1)
    result = run(_marked_sleeper(marker) + "\n        while True:\n            pass\n", limits=limits)
    assert result.timed_out and result.returncode is None and not result.ok
    pids = [int(p) for p in result.stdout.split()]
    assert len(pids) == 2  # the sleeper ran
    assert _wait_gone(lambda: _marked(marker)) == []
    if not BOUNDARY:  # behind the boundary these are the sandbox's own PIDs
        assert _wait_dead(pids) == []
        assert _group_members(pids[0]) == []


def test_cpu_limit_kills_busy_loop() -> None:
    result = run("while True:\n    pass\n", limits=SandboxLimits(wall_time_s=60, cpu_time_s=1))
    assert not result.timed_out
    assert result.returncode in (-signal.SIGXCPU, -signal.SIGKILL)


def test_background_process_does_not_outlive_a_normal_exit() -> None:
    marker = f"harness-sandbox-test-{uuid.uuid4().hex}"
    result = run(_marked_sleeper(marker), limits=roomy(max_processes=1))
    assert result.ok, result.stderr  # in particular it did not wait for the 60 s sleeper
    assert len(result.stdout.split()) == 2  # the sleeper ran
    assert _wait_gone(lambda: _marked(marker)) == []
    if not BOUNDARY:
        assert _wait_dead(_group_members(int(result.stdout.split()[0]))) == []


# --- memory, processes, output --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "blocks = []\nwhile True:\n    blocks.append(bytearray(16 * 2**20))\n",
        "x = bytearray(2**40)\n",
        "s = 'x' * (2**33)\n",
    ],
)
def test_memory_bomb_fails_with_memory_error(source: str) -> None:
    before = resource.getrlimit(resource.RLIMIT_AS)
    result = run(source, limits=roomy(memory_bytes=256 * 2**20))
    assert result.returncode not in (0, None) and not result.timed_out
    assert "MemoryError" in result.stderr
    assert resource.getrlimit(resource.RLIMIT_AS) == before  # the limit was applied to the child only


FORK_BOMBS = {
    "os.fork loop": "import os\nwhile True:\n    os.fork()\n",
    "subprocess.Popen": "import subprocess\nsubprocess.Popen(['sleep', '60'])\n",
    "subprocess.run python": "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])\n",
    "os.system": "import os\nos.system('sleep 60 &')\n",
    "os.posix_spawn": "import os\nos.posix_spawn('/bin/sleep', ['sleep', '60'], {})\n",
    "os.execv": "import os\nos.execv('/bin/sleep', ['sleep', '60'])\n",
    "os.spawnv": "import os\nos.spawnv(os.P_NOWAIT, '/bin/sleep', ['sleep', '60'])\n",
    "pty.spawn": "import pty\npty.spawn(['sleep', '60'])\n",
    "multiprocessing": (
        "import multiprocessing, time\nmultiprocessing.Process(target=time.sleep, args=(60,)).start()\n"
    ),
    "multiprocessing spawn": (
        "import multiprocessing, time\n"
        "multiprocessing.get_context('spawn').Process(target=time.sleep, args=(60,)).start()\n"
    ),
    "_posixsubprocess": "import _posixsubprocess\n_posixsubprocess.fork_exec()\n",
}


@pytest.mark.parametrize("attack", list(FORK_BOMBS.values()), ids=list(FORK_BOMBS))
def test_process_creation_is_blocked(attack: str) -> None:
    source = "import os\nprint(os.getpid(), flush=True)\n" + attack
    result = run_python(source, limits=ROOMY)
    assert result.returncode not in (0, None), result
    assert not result.timed_out
    assert "PermissionError: sandbox:" in result.stderr
    assert _group_members(int(result.stdout.split()[0])) == []


def test_max_processes_allows_exactly_that_many() -> None:
    result = run(
        """
        import subprocess, sys
        print(subprocess.run([sys.executable, '-S', '-c', 'print(6 * 7)'], capture_output=True).stdout)
        try:
            subprocess.run(['true'])
        except PermissionError as exc:
            print('second refused:', exc)
        """,
        limits=roomy(max_processes=1),
    )
    assert result.ok, result.stderr
    first, second = result.stdout.splitlines()
    assert first == "b'42\\n'"
    assert second.startswith("second refused: sandbox: creating more than 1 processes")


def test_huge_output_is_truncated() -> None:
    limits = roomy(output_bytes=1000)
    result = run(
        "import sys\nsys.stdout.write('x' * 10_000_000)\nsys.stderr.write('y' * 10_000_000)\n", limits=limits
    )
    assert result.ok and result.truncated
    assert result.stdout == "x" * 1000 and result.stderr == "y" * 1000


def test_endless_output_is_truncated_and_times_out() -> None:
    limits = SandboxLimits(output_bytes=4096, wall_time_s=1.0)
    result = run("while True:\n    print('spam' * 1000)\n", limits=limits)
    assert result.timed_out and result.truncated
    assert len(result.stdout.encode()) <= limits.output_bytes


def test_truncation_does_not_split_a_character() -> None:
    result = run("print('é' * 1000, end='')", limits=roomy(output_bytes=101))
    assert result.truncated
    assert result.stdout == "é" * 50  # 100 bytes; the dangling half character is dropped


def test_small_output_is_not_truncated() -> None:
    result = run("print('x' * 999, end='')", limits=roomy(output_bytes=1000))
    assert not result.truncated and len(result.stdout) == 999


# --- filesystem -------------------------------------------------------------------------------------------


def _escape_attacks(target: str) -> dict[str, str]:
    name = os.path.basename(target)
    return {
        "open": f"open({target!r}, 'w').write('x')",
        "open append": f"open({target!r}, 'a').write('x')",
        "os.open": f"import os\nos.open({target!r}, os.O_CREAT | os.O_WRONLY)",
        "pathlib": f"import pathlib\npathlib.Path({target!r}).write_text('x')",
        "os.mkdir": f"import os\nos.mkdir({target!r})",
        "os.rename": f"import os\nopen('f', 'w').close()\nos.rename('f', {target!r})",
        "shutil.copy": f"import shutil\nopen('f', 'w').close()\nshutil.copy('f', {target!r})",
        "symlink": f"import os\nos.symlink({target!r}, 'link')\nopen('link', 'w').write('x')",
        "os.mkfifo": f"import os\nos.mkfifo({target!r})",
        "os.mknod": f"import os\nos.mknod({target!r})",
        "sqlite3": f"import sqlite3\nsqlite3.connect({target!r}).execute('create table t (x)')",
        "chdir": f"import os\nos.chdir({os.path.dirname(target)!r})\nopen({name!r}, 'w')",
        "dir_fd": (
            f"import os\nd = os.open({os.path.dirname(target)!r}, os.O_RDONLY)\n"
            f"os.open({name!r}, os.O_CREAT | os.O_WRONLY, dir_fd=d)"
        ),
        "monkeypatched os": (
            "import os, posixpath\nos.getcwd = lambda: '/nowhere'\nposixpath.realpath = lambda p, **k: p\n"
            f"os.lstat = lambda p: os.stat('.')\nopen({target!r}, 'w')"
        ),
        "/proc/self/root": f"open('/proc/self/root' + {target!r}, 'w')",
    }


ESCAPE_IDS = list(_escape_attacks("/tmp/x"))


@pytest.mark.parametrize("attack", ESCAPE_IDS)
def test_writing_to_tmp_is_blocked(attack: str) -> None:
    target = Path(f"/tmp/harness_escape_{uuid.uuid4().hex}")
    try:
        result = run_python(_escape_attacks(str(target))[attack], limits=ROOMY)
        assert not os.path.lexists(target)
        assert result.returncode == 1 and "PermissionError: sandbox:" in result.stderr, result.stderr
    finally:
        if target.is_dir() and not target.is_symlink():
            target.rmdir()
        elif os.path.lexists(target):
            target.unlink()


def test_writing_to_the_callers_cwd_and_the_directory_parent_is_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    marker = f"harness_escape_{uuid.uuid4().hex}"
    result = run(
        f"""
        import os
        for path in ({str(tmp_path / marker)!r}, os.path.join('..', {marker!r})):
            try:
                open(path, 'w').write('escaped')
            except PermissionError:
                print('blocked')
        """
    )
    assert result.ok, result.stderr
    assert result.stdout == "blocked\nblocked\n"
    assert not (tmp_path / marker).exists()
    assert not Path(tempfile.gettempdir(), marker).exists()  # '..' of the sandbox directory


def test_file_size_limit() -> None:
    source = "with open('big', 'wb') as f:\n    f.write(b'x' * 4096)\n"
    result = run(source, limits=roomy(file_size_bytes=1024))
    assert result.returncode == 1 and "File too large" in result.stderr


def test_temp_dir_is_removed_after_runs() -> None:
    ok = run("import os; os.makedirs('a/b'); os.chmod('a', 0); print(os.getcwd())")
    timed_out = run(
        "import os; print(os.getcwd(), flush=True)\nwhile True:\n    pass\n",
        limits=SandboxLimits(wall_time_s=0.5),
    )
    assert ok.ok and timed_out.timed_out
    for result in (ok, timed_out):
        workdir = result.stdout.strip()
        # process mode: a temporary directory of the host; the boundary: the scratch inside the sandbox
        assert os.path.basename(workdir).startswith("harness_sandbox_") or workdir == boundary.SCRATCH
        assert not os.path.exists(workdir)


# --- secrets, introspection, network --------------------------------------------------------------------


def test_parent_environment_is_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv("HARNESS_SANDBOX_TEST_SECRET", secret)
    result = run(
        """
        import json, os
        print(json.dumps(dict(os.environ)))
        try:
            print(open(f'/proc/{os.getppid()}/environ').read())
        except PermissionError:
            print('proc blocked')
        """
    )
    assert result.ok, result.stderr
    env_line, proc_line = result.stdout.splitlines()
    env = json.loads(env_line)
    assert "HARNESS_SANDBOX_TEST_SECRET" not in env and secret not in result.stdout
    assert proc_line == "proc blocked"
    assert env["PYTHONHASHSEED"] == "0" and env["HOME"] == env["TMPDIR"]
    assert os.path.basename(env["HOME"]).startswith("harness_sandbox_") or env["HOME"] == boundary.SCRATCH


def test_harness_files_cannot_be_read() -> None:
    result = run(f"print(open({sandbox.__file__!r}).read()[:20])")
    assert result.returncode == 1 and "PermissionError: sandbox:" in result.stderr
    assert result.stdout == ""


REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "target",
    [
        str(REPO / "harness_gym" / "data" / "coding-v0.jsonl"),  # the source checkout's copy of a task file
        str(REPO / "tests" / "test_sandbox.py"),
        str(REPO / "pyproject.toml"),
        "/etc/hostname",
        sysconfig.get_paths()["purelib"],  # installed packages (a copy of the harness may live there)
        "/",
        tempfile.gettempdir(),
    ],
)
def test_only_the_stdlib_and_its_own_directory_are_readable(target: str) -> None:
    """Every copy of the suite's data and source is out of reach, not just the installed package."""
    attacks = [
        f"open({target!r}, 'rb').read(1)",
        f"import os\nos.listdir({target!r})",
        f"import os\nlist(os.scandir({target!r}))",
        f"import os\nos.close(os.open({target!r}, os.O_RDONLY))",
        f"import os\nos.chdir({target!r})\nos.listdir()",
        f"import pathlib\nlist(pathlib.Path({target!r}).iterdir())",
        f"import os\nos.symlink({target!r}, 'link')\nopen('link', 'rb').read(1)",
    ]
    for attack in attacks:
        if os.path.isdir(target) == ("read(1)" in attack):
            continue  # files are opened, directories listed
        result = run(attack)
        refused = "PermissionError: sandbox:" in result.stderr
        absent = BOUNDARY and "FileNotFoundError" in result.stderr  # behind the boundary: not there at all
        assert result.returncode == 1 and (refused or absent), (attack, result.stderr)


def test_the_standard_library_and_its_own_proc_entry_stay_readable() -> None:
    result = run(
        """
        import json, os, zoneinfo
        print(len(open(json.__file__).read()) > 0, len(os.listdir(os.path.dirname(os.__file__))) > 10)
        print(open('/proc/self/status').read().startswith('Name:'), len(open('/dev/urandom', 'rb').read(4)))
        print(zoneinfo.ZoneInfo('UTC').key if zoneinfo.available_timezones() else 'UTC')
        """
    )
    assert result.ok, result.stderr
    assert result.stdout == "True True\nTrue 4\nUTC\n"


def test_native_code_outside_the_standard_library_cannot_be_loaded() -> None:
    """An extension module written into the directory (or copied there) would run without the hook."""
    import importlib

    modules = ("_bisect", "_heapq", "array", "math", "_json")
    found = [(m, importlib.import_module(m)) for m in modules]
    name, extension = next(((m, mod.__file__) for m, mod in found if getattr(mod, "__file__", None)), (0, 0))
    if not extension:
        pytest.skip("this interpreter has its extension modules built in")
    result = run(
        f"""
        import importlib.util, shutil
        shutil.copyfile({extension!r}, 'copied.so')
        spec = importlib.util.spec_from_file_location({name!r}, 'copied.so')
        importlib.util.module_from_spec(spec)
        """
    )
    assert result.returncode == 1 and "ImportError: sandbox: loading native code" in result.stderr


@pytest.mark.parametrize("module", ["ctypes", "_ctypes", "ctypes.util", "_xxsubinterpreters"])
def test_ctypes_and_subinterpreters_cannot_be_imported(module: str) -> None:
    result = run(f"import {module}")
    assert result.returncode == 1
    assert "ImportError: sandbox: importing" in result.stderr


def test_network_is_blocked() -> None:
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port = server.getsockname()[1]
        result = run(f"import socket\nsocket.socket().connect(('127.0.0.1', {port}))")
        with pytest.raises(TimeoutError):
            server.accept()
    assert result.returncode == 1 and "PermissionError: sandbox: network access" in result.stderr


@pytest.mark.parametrize(
    "attack",
    [
        "import os\nos.kill(os.getppid(), 0)",  # signal 0: harmless even if containment failed
        "import os\nos.kill(-1, 0)",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
        "import gc\ngc.get_objects()",
    ],
    ids=["kill parent", "kill everyone", "raise rlimit", "gc walk"],
)
def test_other_escapes_are_blocked(attack: str) -> None:
    result = run_python(attack, limits=ROOMY)
    assert result.returncode == 1 and "PermissionError: sandbox:" in result.stderr


def test_lowering_limits_and_signalling_itself_are_allowed() -> None:
    result = run(
        """
        import os, resource, signal
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft // 2, hard))
        os.kill(os.getpid(), 0)
        signal.signal(signal.SIGUSR1, lambda *a: print('got signal'))
        os.kill(os.getpid(), signal.SIGUSR1)
        """
    )
    assert result.ok, result.stderr
    assert result.stdout == "got signal\n"


def test_a_sibling_whose_name_starts_with_the_directory_name_is_outside() -> None:
    """``/tmp/harness_sandbox_x_sibling`` is not inside ``/tmp/harness_sandbox_x``: the audit hook refuses
    creating it and writing there (in process mode that would be a real write outside the scratch)."""
    result = run(
        """
        import os
        sibling = os.getcwd() + "_sibling"
        print(sibling)
        for attempt in (lambda: os.mkdir(sibling), lambda: open(sibling + "_file", "w")):
            try:
                attempt()
                print("allowed")
            except PermissionError as exc:
                print("refused" if str(exc).startswith("sandbox: ") else exc)
        """
    )
    sibling, *outcomes = result.stdout.splitlines()
    try:
        assert outcomes == ["refused", "refused"], result.stderr
    finally:
        for leftover in (sibling, sibling + "_file"):
            if os.path.isdir(leftover):
                os.rmdir(leftover)
            elif os.path.lexists(leftover):
                os.unlink(leftover)
