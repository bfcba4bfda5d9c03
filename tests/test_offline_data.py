"""The one lookup of the MBPP+ dataset that tests share (``tests/offline_data.py``): a missing
file is one skip naming the fix (``tests/test_ci_no_skips.py`` shows CI failing any skip)."""

from __future__ import annotations

import pytest

from offline_data import mbpp_plus_path


def test_a_present_file_is_returned(tmp_path, monkeypatch):
    data = tmp_path / "MbppPlus.jsonl.gz"
    data.write_bytes(b"")
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", str(data))
    assert mbpp_plus_path() == str(data)


@pytest.mark.parametrize("value", ["", "missing.jsonl.gz", "."])
def test_a_missing_file_skips_naming_the_setting(tmp_path, monkeypatch, value):
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", value and str(tmp_path / value))
    with pytest.raises(pytest.skip.Exception, match="set MBPP_OVERRIDE_PATH"):
        mbpp_plus_path()
