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
    assert capture.text() == "abcde" and not capture.truncated
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
    assert whole.text() == "ab\ufffdc" and not whole.truncated
