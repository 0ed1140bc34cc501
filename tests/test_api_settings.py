"""Settings come from LANGCLASS_* environment variables and are validated at start-up."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from langclass.app.settings import Settings, get_settings


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
    with pytest.raises(ValidationError):
        Settings()


def test_get_settings_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    get_settings.cache_clear()
    try:
        monkeypatch.setenv("LANGCLASS_MAX_STATES", "11")
        first = get_settings()
        monkeypatch.setenv("LANGCLASS_MAX_STATES", "12")
        assert get_settings() is first and first.max_states == 11
    finally:
        get_settings.cache_clear()
