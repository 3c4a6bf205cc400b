"""The one way a test may skip for a missing part of the test environment (``conftest.unavailable`` and
``conftest.require``): a skip locally, a failure under ``CI=true``."""

from __future__ import annotations

import pytest
from conftest import require, unavailable


def test_a_missing_module_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no_such_module_xyz cannot be imported"):
        require("no_such_module_xyz")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"^CI=true but no_such_module_xyz cannot be imported"):
        require("no_such_module_xyz")
    assert require("json").dumps([1]) == "[1]"


def test_unavailable_names_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match=r"^no chromium$"):
        unavailable("no chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"^CI=true but no chromium$"):
        unavailable("no chromium")
