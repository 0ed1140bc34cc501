"""Settings come from LANGCLASS_* environment variables and are validated at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from langclass.app.settings import Settings, SettingsError, get_settings


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", "postgresql+psycopg://u@h:5432/d")
    monkeypatch.setenv("LANGCLASS_API_KEYS", "alpha-key-123, beta-key-456")
    monkeypatch.setenv("LANGCLASS_TIME_LIMIT_S", "2.5")
    monkeypatch.setenv("LANGCLASS_MAX_STATES", "77")
    monkeypatch.setenv("LANGCLASS_EXECUTOR", "ray")
    monkeypatch.setenv("LANGCLASS_REQUIRE_KEY_FOR_WRITES", "true")
    s = Settings()
    assert s.database_url == "postgresql+psycopg://u@h:5432/d"
    assert s.api_keys == ["alpha-key-123", "beta-key-456"] and s.auth_enabled and s.require_key_for_writes
    limits = s.limits()
    assert limits.time_limit_s == 2.5 and limits.max_states == 77
    assert s.executor == "ray"
    assert "alpha-key-123" not in repr(s)  # keys stay out of logs and tracebacks


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert s.database_url == "sqlite:///./langclass.db" and s.is_sqlite
    assert s.api_keys == [] and not s.auth_enabled
    assert s.classify_isolation == "process" and s.executor == "local"


@pytest.mark.parametrize(
    "name,value",
    [("LANGCLASS_EXECUTOR", "kubernetes"), ("LANGCLASS_TIME_LIMIT_S", "-1"), ("LANGCLASS_MAX_BODY_BYTES", "10"),
     ("LANGCLASS_API_KEYS", "changeme"), ("LANGCLASS_API_KEYS", "short"), ("LANGCLASS_PORT", "70000")],
)
def test_invalid_values_stop_start_up(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as info:
        Settings()
    assert name in str(info.value)
    assert info.value.__suppress_context__  # pydantic's text (which echoes inputs) is not chained


def test_settings_errors_never_echo_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "RealSecretKey-9f8e7d6c"
    monkeypatch.setenv("LANGCLASS_API_KEYS", f"{secret},abc")
    with pytest.raises(SettingsError) as info:
        Settings()
    text = str(info.value)
    assert secret not in text and "abc" not in text
    assert "LANGCLASS_API_KEYS" in text and "entry 1" in text
    assert "entries 0, 2" in str(pytest.raises(SettingsError, Settings, api_keys=f"changeme,{secret},xxx").value)


def test_repr_hides_keys_and_database_password() -> None:
    s = Settings(api_keys="RealSecretKey-9f8e7d6c", database_url="postgresql+psycopg://u:hunter2-pass@h:5432/d")
    assert "RealSecretKey" not in repr(s) and "RealSecretKey" not in str(s)
    assert "hunter2-pass" not in repr(s) and "u:***@h" in repr(s)
    assert s.database_url.endswith("hunter2-pass@h:5432/d")  # the value itself is intact


@pytest.mark.parametrize("keys", ["RealSecretKey-9f8e7d6c,abc", "changeme"])
def test_cli_start_up_with_bad_settings_is_one_clean_line(keys: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    env.update(LANGCLASS_API_KEYS=keys, LANGCLASS_DATABASE_URL=f"sqlite:///{tmp_path / 'x.db'}")
    proc = subprocess.run([sys.executable, "-m", "langclass.app.cli.commands", "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error (invalid-settings): LANGCLASS_API_KEYS: entr"), proc.stderr
    assert "Traceback" not in proc.stderr and "RealSecretKey" not in proc.stderr + proc.stdout


@pytest.mark.parametrize(("url", "command", "kind", "says"), [
    ("sqlite:////nonexistent/dir/x.db", "db current", "invalid-settings", "'/nonexistent/dir' of the SQLite file does not exist"),
    ("sqlite:////nonexistent/dir/x.db", "serve", "invalid-settings", "'/nonexistent/dir' of the SQLite file does not exist"),
    ("bogus://x", "serve", "invalid-settings", "unknown database dialect 'bogus'"),
    ("not a url", "db current", "invalid-settings", "not a SQLAlchemy database URL"),
    ("postgresql+psycopg://u:hunter2-pass@127.0.0.1:1/d", "db current", "database-unavailable", "cannot open the database"),
])
def test_a_bad_database_url_is_one_clean_line_and_exit_2(url: str, command: str, kind: str, says: str) -> None:
    """(Before: an OperationalError / NoSuchModuleError traceback and exit status 1.)"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    env.update(LANGCLASS_DATABASE_URL=url)
    proc = subprocess.run([sys.executable, "-m", "langclass.app.cli.commands", *command.split()], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error ({kind}): LANGCLASS_DATABASE_URL: ") and says in lines[0], proc.stderr
    assert "hunter2-pass" not in proc.stderr + proc.stdout


def test_monoid_entries_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCLASS_MAX_MONOID_ENTRIES", "1234")
    assert Settings().limits().max_monoid_entries == 1234


def test_get_settings_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    get_settings.cache_clear()
    try:
        monkeypatch.setenv("LANGCLASS_MAX_STATES", "11")
        first = get_settings()
        monkeypatch.setenv("LANGCLASS_MAX_STATES", "12")
        assert get_settings() is first and first.max_states == 11
    finally:
        get_settings.cache_clear()


def test_limits_are_declared_once_and_documented_alike() -> None:
    """The service's limit defaults are the library's (Limits()), and the configuration table
    (docs/configuration.md) and docs/regex.md's limits table state those same values."""
    import re

    from langclass.core.base.limits import Limits

    root = Path(__file__).resolve().parent.parent
    readme = (root / "docs" / "configuration.md").read_text(encoding="utf-8")
    regex_doc = (root / "docs" / "regex.md").read_text(encoding="utf-8")
    library = Limits()
    assert Settings().limits() == library
    for name in Limits.__dataclass_fields__:
        value = getattr(library, name)
        row = re.search(rf"^\| `LANGCLASS_{name.upper()}` \| `([^`]*)` \|", readme, re.M)
        assert row, f"docs/configuration.md has no configuration row for LANGCLASS_{name.upper()}"
        assert float(row.group(1)) == float(value), f"docs/configuration.md says {name} = {row.group(1)}, the code {value}"
        doc_row = re.search(rf"^\| `{name}` \| ([0-9,.]+) \|", regex_doc, re.M)
        if doc_row:
            assert float(doc_row.group(1).replace(",", "")) == float(value), f"docs/regex.md says {name} = {doc_row.group(1)}"
    assert re.search(r"^\| `time_limit_s` \|", regex_doc, re.M), "docs/regex.md lists the time limit"
