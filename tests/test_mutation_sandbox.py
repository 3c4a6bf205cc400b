"""The in-process sandbox's host-side decisions, stated without running a sandbox: which limits are
accepted, which file names land inside the scratch directory, what the child's environment holds and how
much output is kept."""

from __future__ import annotations

import pytest

from harness_gym.sandbox import runner
from harness_gym.sandbox.runner import SandboxLimits, SandboxResult


@pytest.mark.parametrize(
    ("field", "bad", "good"),
    [
        ("wall_time_s", 0.0, 0.01),
        ("cpu_time_s", 0, 1),
        ("memory_bytes", 0, 1),
        ("file_size_bytes", -1, 0),
        ("max_processes", -1, 0),
        ("output_bytes", -1, 0),
    ],
)
def test_each_limit_refuses_the_first_value_past_its_bound(field: str, bad: float, good: float) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be .*, got {bad!r}$"):
        SandboxLimits(**{field: bad})
    assert getattr(SandboxLimits(**{field: good}), field) == good


def test_a_result_is_ok_only_with_exit_status_zero_and_no_timeout() -> None:
    def result(code: int | None, timed_out: bool) -> SandboxResult:
        return SandboxResult(code, "", "", timed_out, False, 0.0)

    assert result(0, False).ok
    assert not result(0, True).ok
    assert not result(1, False).ok
    assert not result(None, True).ok


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../up", "a/../../up", "nul\0l", "."])
def test_file_names_outside_the_directory_are_refused(tmp_path, name: str) -> None:
    with pytest.raises(ValueError, match="sandbox file names must be relative paths inside the directory"):
        runner._place_files(str(tmp_path), {name: "x"})
    assert list(tmp_path.iterdir()) == []


def test_files_are_placed_with_their_subdirectories_and_exact_text(tmp_path) -> None:
    runner._place_files(str(tmp_path), {"a.py": "x = 1\r\n", "pkg/sub/b.txt": "é"})
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\r\n"
    assert (tmp_path / "pkg" / "sub" / "b.txt").read_text(encoding="utf-8") == "é"


def test_files_are_written_as_utf_8_whatever_the_hosts_locale(tmp_path) -> None:
    """Decision: the child reads its files as UTF-8 (``PYTHONUTF8=1``), so they are written as UTF-8 even
    where the host's locale encoding is another: here ASCII (the C locale, neither coerced nor in UTF-8
    mode), where the locale's codec cannot even encode the text."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    package_root = Path(runner.__file__).parents[2]
    files = "{'b.txt': '\\u00e9'}"  # the command line itself stays ASCII
    script = f"from harness_gym.sandbox import runner; runner._place_files({str(tmp_path)!r}, {files})"
    env = {**os.environ, "PYTHONPATH": str(package_root), "LC_ALL": "C", "LANG": "C"}
    env |= {"PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    if env.get("MUTANT_UNDER_TEST") == "stats":  # mutmut's call-recording run: the child runs the original
        env["MUTANT_UNDER_TEST"] = ""
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "b.txt").read_bytes() == "é".encode()


def test_the_child_environment_is_built_from_scratch(monkeypatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "x")
    env = runner._child_env("/scratch")
    assert env == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": "/scratch",
        "TMPDIR": "/scratch",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONUTF8": "1",
        "MALLOC_ARENA_MAX": "2",
    }


def test_capture_keeps_exactly_the_limit_and_says_so() -> None:
    capture = runner._Capture(5)
    capture.feed(b"abc")
    capture.feed(b"de")
    assert capture.text() == "abcde" and capture.truncated is False
    capture.feed(b"f")
    assert capture.text() == "abcde" and capture.truncated
    capture.feed(b"gh")
    assert bytes(capture.data) == b"abcde"


def test_capture_drops_a_character_cut_at_the_limit() -> None:
    capture = runner._Capture(4)
    capture.feed("abcé".encode())  # five bytes: é is cut in half
    assert capture.truncated and capture.text() == "abc"
    whole = runner._Capture(10)
    whole.feed(b"ab\xffc")
    assert whole.text() == "ab\ufffdc" and whole.truncated is False
    cut = runner._Capture(4)
    cut.feed(b"a\xffbcd")  # an invalid byte in what is kept is replaced, as in an untruncated stream
    assert cut.truncated and cut.text() == "a\ufffdbc"


# -- one run each, with the in-process layer alone ------------------------------------------------------
def test_a_run_returns_its_output_status_and_removes_its_directory() -> None:
    source = (
        "import os, sys\n"
        "print(os.getcwd()); print(open('data/in.txt').read()); print(sys.stdin.read())\n"
        "print(os.environ['HOME'] == os.getcwd(), 'SECRET' in os.environ)\n"
        "sys.stderr.write('note')\n"
        "raise SystemExit(3)\n"
    )
    result = runner.run_in_process(source, stdin="from stdin", files={"data/in.txt": "placed"})
    cwd, placed, stdin, env = result.stdout.splitlines()
    assert (placed, stdin, env) == ("placed", "from stdin", "True False")
    assert result.stderr == "note" and result.returncode == 3
    assert result.timed_out is False and result.truncated is False and not result.ok
    assert "harness_sandbox_" in cwd
    import os

    assert not os.path.exists(cwd)


def test_a_run_past_its_wall_time_is_killed_and_keeps_its_output() -> None:
    source = "import sys, time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.01)\n"
    result = runner.run_in_process(source, limits=SandboxLimits(wall_time_s=1.0))
    assert result.timed_out and result.returncode is None and not result.ok
    assert result.stdout == "started\n"


def test_output_beyond_the_limit_is_cut_and_marked() -> None:
    source = "import sys\nsys.stdout.write('x' * 5000)\nsys.stderr.write('y' * 10)\n"
    result = runner.run_in_process(source, limits=SandboxLimits(output_bytes=100))
    assert result.ok and result.truncated
    assert result.stdout == "x" * 100 and result.stderr == "y" * 10


def test_a_large_stdin_is_fed_whole_and_an_unread_one_does_not_block() -> None:
    data = "z" * 300_000
    read = runner.run_in_process("import sys\nprint(len(sys.stdin.read()))\n", stdin=data)
    assert read.ok and read.stdout == "300000\n"
    unread = runner.run_in_process("print('done')\n", stdin=data)
    assert unread.ok and unread.stdout == "done\n"


def test_a_background_process_does_not_outlive_the_run() -> None:
    source = (
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        "print(pid, flush=True)\n"
    )
    result = runner.run_in_process(source, limits=SandboxLimits(max_processes=1))
    assert result.returncode == 0 and not result.timed_out, result.stderr
    # the group is killed once the parent exits: the sleeping child is gone, not waited for
    import os

    child = int(result.stdout)
    try:
        os.kill(child, 0)
    except ProcessLookupError:
        pass
    else:  # a pid may be reused, but not by our sleeping child
        with open(f"/proc/{child}/cmdline", "rb") as f:
            assert b"harness_sandbox" not in f.read()


def test_process_exit_checks_on_this_process_s_own_children() -> None:
    import subprocess

    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert not runner._has_exited(proc.pid)
        runner._kill_group(proc.pid)
        proc.wait()
        assert runner._has_exited(proc.pid)  # reaped: no longer a child
    finally:
        proc.kill()
    runner._kill_group(proc.pid)  # a gone group is not an error
    pidfd = runner._pidfd_open(proc.pid)
    assert pidfd is None
    fd = runner._pidfd_open(__import__("os").getpid())
    assert fd is not None
    __import__("os").close(fd)


def test_remove_tree_removes_what_the_code_locked(tmp_path) -> None:
    import os

    top = tmp_path / "scratch"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f").write_text("x")
    os.chmod(top / "a" / "b", 0o000)
    os.chmod(top / "a", 0o500)
    runner._remove_tree(str(top))
    assert not top.exists()
    runner._remove_tree(str(top))  # already gone: nothing to do


def test_remove_tree_opens_every_directory_before_the_second_try(tmp_path, monkeypatch) -> None:
    """The first removal fails (as it does for a non-root user on a directory without write permission):
    every real directory below is made 0o700, links are left alone, then the tree goes."""
    import os
    import shutil
    import warnings

    top = tmp_path / "scratch"
    (top / "a" / "b").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o555)
    (top / "a" / "link").symlink_to(outside, target_is_directory=True)
    for d in (top / "a" / "b", top / "a", top):
        os.chmod(d, 0o500)
    real_rmtree, seen = shutil.rmtree, []

    def failing_once(path, *args, **kwargs):
        if not seen:
            seen.append({p.name: p.stat().st_mode & 0o777 for p in (top, top / "a", top / "a" / "b")})
            raise PermissionError(13, "denied")
        seen.append(os.stat(top / "a" / "b").st_mode & 0o777)
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(runner.shutil, "rmtree", failing_once)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner._remove_tree(str(top))
    assert seen[0] == {"scratch": 0o500, "a": 0o500, "b": 0o500} and seen[1] == 0o700
    assert not top.exists() and outside.stat().st_mode & 0o777 == 0o555

    def never(path, *args, **kwargs):
        if not kwargs.get("ignore_errors"):
            raise PermissionError(13, "denied")

    (tmp_path / "stuck").mkdir()
    monkeypatch.setattr(runner.shutil, "rmtree", never)
    with pytest.warns(RuntimeWarning, match=r"^could not remove sandbox directory .*stuck$"):
        runner._remove_tree(str(tmp_path / "stuck"))


# -- the in-process run's remaining decisions ---------------------------------------------------------------
def test_a_run_without_stdin_reads_nothing_has_no_site_and_times_itself() -> None:
    """No stdin is an empty one; the interpreter starts without ``site`` (no site-packages on its path);
    Popen is given ``close_fds`` itself (with ``pass_fds`` a false value only draws a warning); the run's
    duration is its own wall time."""
    import os
    import time
    import warnings

    source = "import os, sys\nprint(repr(sys.stdin.read()), 'site' in sys.modules, os.getcwd())\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = time.monotonic()
        result = runner.run_in_process(source)
        call = time.monotonic() - before
    stdin, site, cwd = result.stdout.split()
    assert result.ok and (stdin, site) == ("''", "False")
    assert os.path.basename(cwd).startswith("harness_sandbox_")
    assert isinstance(result.duration_s, float) and 0.0 < result.duration_s <= call  # within the call


def test_the_child_reads_time_zone_data() -> None:
    """The time-zone database is on the child's read list (the standard library's zoneinfo needs it)."""
    result = runner.run_in_process("import zoneinfo\nprint(zoneinfo.ZoneInfo('Europe/Paris').key)\n")
    assert result.ok and result.stdout == "Europe/Paris\n", result.stderr


def test_the_child_is_given_every_setting_its_bootstrap_reads(monkeypatch) -> None:
    import re

    given: dict = {}

    def execute(config, stdin, limits, root):
        given.update(config)
        return SandboxResult(0, "", "", False, False, 0.0)

    monkeypatch.setattr(runner, "_execute", execute)
    runner.run_in_process("pass")
    assert set(given) == set(re.findall(r'cfg\["(\w+)"\]', runner._BOOTSTRAP))
    assert given["nproc_allowance"] == runner._NPROC_THREAD_ALLOWANCE
    assert (given["allow_read"], given["deny_read"]) == runner._read_lists()


def test_without_an_interpreter_path_a_run_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setattr(runner.sys, "executable", "")
    with pytest.raises(
        RuntimeError, match=r"^sys\.executable is unknown; cannot start a sandboxed interpreter$"
    ):
        runner.run_in_process("pass")


def _remove(path: str) -> None:
    runner._remove_tree(path)  # as run_in_process calls it: the warning names the line that called this


def test_a_tree_that_stays_is_left_owner_only_and_the_warning_names_the_callers_line(
    tmp_path, monkeypatch
) -> None:
    import inspect
    import os

    top = tmp_path / "scratch"
    (top / "a").mkdir(parents=True)
    os.chmod(top, 0o755)

    def rmtree(path, ignore_errors=False):
        if not ignore_errors:
            raise PermissionError(13, "denied")

    monkeypatch.setattr(runner.shutil, "rmtree", rmtree)
    with pytest.warns(RuntimeWarning, match="could not remove sandbox directory") as caught:
        line = inspect.currentframe().f_lineno + 1
        _remove(str(top))
    if "MUTANT_UNDER_TEST" in os.environ:  # under mutmut (set, if empty, in every run) its trampoline calls
        assert caught[0].filename.endswith(os.path.join("mutmut", "mutation", "trampoline.py"))
    else:
        assert (caught[0].filename, caught[0].lineno) == (__file__, line)
    assert os.stat(top).st_mode & 0o777 == 0o700


def test_a_tree_whose_permissions_cannot_be_changed_is_still_tried(tmp_path, monkeypatch) -> None:
    top = tmp_path / "scratch"
    (top / "a").mkdir(parents=True)
    first = []

    def rmtree(path, ignore_errors=False):
        if not first:
            first.append(path)
            raise PermissionError(13, "denied")

    def chmod(path, mode):
        raise PermissionError(1, "not permitted")

    monkeypatch.setattr(runner.shutil, "rmtree", rmtree)
    monkeypatch.setattr(runner.os, "chmod", chmod)
    with pytest.warns(RuntimeWarning, match="could not remove sandbox directory"):
        runner._remove_tree(str(top))
