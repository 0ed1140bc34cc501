"""Service settings, read once from environment variables prefixed ``LANGCLASS_``.

Every knob of the service lives here (pydantic-settings validates it at start-up, so a typo in a
value stops the service instead of surfacing later). Examples::

    LANGCLASS_DATABASE_URL=postgresql+psycopg://user@db:5432/langclass
    LANGCLASS_API_KEYS=key-one,key-two
    LANGCLASS_MAX_STATES=5000
    LANGCLASS_TIME_LIMIT_S=10

:func:`get_settings` returns the process-wide instance; tests build their own ``Settings(...)``
and pass it to :func:`langclass.app.main.create_app`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Literal

from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from langclass.core.base.limits import DEFAULT_LIMITS, Limits

__all__ = ["Settings", "SettingsError", "get_settings", "setting_for_limit"]

_PLACEHOLDER_KEYS = {"changeme", "change-me", "secret", "placeholder", "your-key", "xxx"}


class SettingsError(ValueError):
    """Invalid settings: one line per offending ``LANGCLASS_*`` variable, never echoing a value.

    Raised instead of pydantic's ``ValidationError`` (whose text repeats the raw input, which for
    ``LANGCLASS_API_KEYS`` would print valid secrets to logs and terminals). ``errors`` holds
    ``{"variable", "message"}`` per problem.
    """

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        lines = [f"{e['variable']}: {e['message']}" for e in errors]
        super().__init__("invalid settings: " + "; ".join(lines))


class Settings(BaseSettings):
    """All settings of the service, CLI and workers.

    Attributes (environment variable = ``LANGCLASS_`` + upper-case name):
        database_url: SQLAlchemy URL. Default: embedded SQLite file ``./langclass.db``.
            PostgreSQL: ``postgresql+psycopg://user:password@host:5432/dbname``.
        db_connect_timeout_s / db_statement_timeout_s: bounds on opening a connection (and
            waiting for a pooled one) and on one statement (PostgreSQL ``statement_timeout`` and
            ``tcp_user_timeout``; SQLite's busy timeout): during a database outage a request
            fails with 503 within them instead of hanging for the whole outage.
        api_keys: comma-separated bearer keys. Empty = no authentication. When set, DELETE and
            writes that cost GPU time (experiments) need ``Authorization: Bearer <key>``.
        require_key_for_writes: when keys are set, also require one for ``POST /v1/languages``
            (storing a language). Classification without storing (``POST /v1/classify``) and reads
            stay open.
        trusted_proxies: comma-separated addresses or networks (``10.0.0.0/8``, ``*``) of reverse
            proxies whose ``X-Forwarded-For`` / ``X-Forwarded-Proto`` ``langclass serve`` believes.
            Empty (the default): the client address is always the TCP peer's, so the sign-in throttle
            (keyed by it) cannot be escaped by varying a header.
        max_body_bytes: largest accepted request body; larger bodies get 413.
        body_read_timeout_s: a client that stops sending its request body for this long gets 408.
        max_json_depth: deepest nesting of arrays/objects in a JSON request body (422
            ``limit-exceeded`` naming ``max_json_depth`` beyond it).
        max_json_elements: most JSON values (arrays, objects, scalars; keys not counted) in a
            request body, counted before it is decoded (422 ``limit-exceeded`` naming
            ``max_json_elements`` beyond it); a DFA in the list form needs about states × (|Σ| + 1).
        max_regex_length ... max_monoid_entries, time_limit_s, max_parameters: the :class:`~langclass.core.base.limits.Limits` of one
            classification request (time in seconds of wall clock); their defaults are
            ``Limits()``'s, declared once in :mod:`langclass.core.base.limits`. Construct jobs run under
            them too (the executor hands them to each worker).
        classify_concurrency: classifications running at once; further requests wait.
        classify_isolation: ``"process"`` (default): each classification runs in a worker process
            that is killed at the time limit; ``"thread"``: worker threads (lighter, but a step that
            overruns the limit keeps its thread busy until it next checks the deadline).
        classify_queue_timeout_s: longest wait for a free classification worker before answering
            503 ``busy`` with ``Retry-After``.
        classify_queue_max: requests that may wait for a classification worker; one more is
            answered 503 ``busy`` with ``Retry-After`` at once (admission control).
        classify_light_workers: worker processes of the light lane, where classify requests
            predicted small run first under hard bounds so they never wait behind heavy ones
            (0 = no light lane); classify_light_max_states, classify_light_max_monoid_size,
            classify_light_time_limit_s: those bounds (a request past one goes on to the main
            workers within its budget); classify_light_queue_max: requests that may wait for a
            light worker (one more goes to the main workers at once).
        classify_worker_max_tasks / classify_worker_max_rss_mb: a classification worker process
            is recycled after this many calls, or once its resident memory reached this many MiB.
        monoid_cache_mb: memory budget of each classification worker's cache of enumerated
            monoids (paging ``GET …/monoid``); 0 = no cache.
        auto_migrate: ``langclass serve`` applies migrations before serving.
        executor: ``"local"`` (embedded worker processes) or ``"ray"`` for training/construct jobs.
        worker_slots: jobs a local executor runs at once (one process each).
        ray_address: Ray cluster address (``RAY_ADDRESS`` is also honoured by Ray itself).
        ray_num_gpus: GPU fraction each Ray task asks for (so many tiny models share one GPU).
        ray_num_cpus: CPUs each Ray task asks for.
        job_lease_s / job_max_attempts: job lease length and retries (used by the job layer).
        job_checkpoint_dir: where train jobs keep per-job checkpoints so a retried attempt resumes
            (shared storage for Ray; None = no checkpoints); removed when the job ends.
        max_runs, max_test_length, max_eval_strings, job_max_*: the named limits of a train job's
            spec (:class:`~langclass.models.training.specs.JobLimits`: runs, string lengths, test strings,
            steps, layers, width, heads, feed-forward width, batch, strings per length, seeds,
            encoding parameters); a spec over one is refused with 422 before it is queued.
        census_dir: folder of the stored census runs' per-language data files (``<run id>.npz``).
            Default: ``langclass-census/`` next to the SQLite database file, or ``./langclass-census``
            for another database (:meth:`census_directory`).
        job_time_limit_s: wall-clock budget of one job run; the worker stops it there and records
            ``limit-exceeded``.
        job_model_max_bytes: largest zip of portable models a construct / train job stores for
            ``GET /v1/jobs/{id}/model`` (default 64 MiB; 0 stores none). A larger one is not stored
            and the result's ``portable_model.stored`` is false with the reason.
        job_worker_max_rss_bytes: hard memory cap of each local job worker process (bytes; default
            nine tenths of the host's memory divided by ``worker_slots``, and never more). The
            executor's watchdog kills a worker over it; its job fails with ``memory-limit``, not
            retried (:mod:`langclass.app.execution.watchdog`).
        job_cancel_grace_s: a running job's cancel request its run has not honoured after this
            many seconds kills the worker process (the job is recorded ``cancelled``).
        job_watch_interval_s: how often the watchdog samples the workers' memory and cancels.
        code_version: overrides the code version stamped on every stored record.
        log_level: ``debug`` | ``info`` | ``warning`` | ``error``.
    """

    model_config = SettingsConfigDict(env_prefix="LANGCLASS_", extra="ignore", validate_default=True)

    database_url: str = "sqlite:///./langclass.db"
    db_connect_timeout_s: float = Field(5.0, gt=0, allow_inf_nan=False)
    db_statement_timeout_s: float = Field(15.0, gt=0, allow_inf_nan=False)

    # --- access -------------------------------------------------------------------------
    api_keys: Annotated[list[str], NoDecode] = Field(default_factory=list, repr=False)
    require_key_for_writes: bool = False
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # --- request size and classification limits -----------------------------------------
    max_body_bytes: int = Field(1_000_000, ge=1_024)
    max_json_depth: int = Field(64, ge=2, le=500)
    max_json_elements: int = Field(200_000, ge=16)
    body_read_timeout_s: float | None = Field(30.0, gt=0)
    # one declaration: the defaults are those of core.limits.Limits (the library's)
    max_regex_length: int = Field(DEFAULT_LIMITS.max_regex_length, ge=1)
    max_nesting_depth: int = Field(DEFAULT_LIMITS.max_nesting_depth, ge=1)
    max_repetition: int = Field(DEFAULT_LIMITS.max_repetition, ge=0)
    max_states: int = Field(DEFAULT_LIMITS.max_states, ge=1)
    max_alphabet: int = Field(DEFAULT_LIMITS.max_alphabet, ge=1)
    max_monoid_size: int = Field(DEFAULT_LIMITS.max_monoid_size, ge=1)
    max_monoid_entries: int = Field(DEFAULT_LIMITS.max_monoid_entries, ge=1)
    max_k_automaton_letters: int = Field(DEFAULT_LIMITS.max_k_automaton_letters, ge=1)
    time_limit_s: float | None = Field(DEFAULT_LIMITS.time_limit_s, gt=0)
    max_parameters: int | None = Field(DEFAULT_LIMITS.max_parameters, ge=1)
    classify_concurrency: int = Field(2, ge=1)
    classify_isolation: Literal["process", "thread"] = "process"
    classify_queue_timeout_s: float | None = Field(60.0, gt=0)
    classify_queue_max: int = Field(16, ge=0)
    classify_light_workers: int = Field(1, ge=0)
    classify_light_max_states: int = Field(256, ge=1)
    classify_light_max_monoid_size: int = Field(50_000, ge=1)
    classify_light_time_limit_s: float = Field(1.0, gt=0, allow_inf_nan=False)
    classify_light_queue_max: int = Field(8, ge=0)
    classify_worker_max_tasks: int = Field(10_000, ge=1)
    classify_worker_max_rss_mb: int = Field(1024, ge=16)
    monoid_cache_mb: int = Field(256, ge=0)

    # --- service ------------------------------------------------------------------------
    auto_migrate: bool = True
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    code_version: str | None = None

    # --- jobs (executor; used by the job layer) ----------------------------------------
    executor: Literal["local", "ray"] = "local"
    worker_slots: int = Field(1, ge=0)
    ray_address: str | None = None
    ray_num_gpus: float = Field(0.0, ge=0)
    ray_num_cpus: float = Field(1.0, gt=0)
    job_lease_s: float = Field(60.0, gt=0)
    job_max_attempts: int = Field(3, ge=1)
    job_checkpoint_dir: str | None = None
    census_dir: str | None = None

    # --- job spec limits (JobLimits: one named limit per numeric field of a train spec) --------
    max_runs: int = Field(500, ge=1)
    max_test_length: int = Field(10_000, ge=1)
    max_eval_strings: int = Field(5_000_000, ge=1)
    job_max_steps: int = Field(1_000_000, ge=1)
    job_max_layers: int = Field(48, ge=1)
    job_max_d_model: int = Field(4096, ge=1)
    job_max_heads: int = Field(64, ge=1)
    job_max_d_ff: int = Field(16384, ge=1)
    job_max_batch_size: int = Field(8192, ge=1)
    job_max_eval_per_length: int = Field(1_000_000, ge=1)
    job_max_seed: int = Field(2**32 - 1, ge=0, le=2**63 - 1)
    job_max_encoding_param: float = Field(1e9, gt=0, allow_inf_nan=False)
    job_max_parameters: int = Field(100_000_000, ge=1)
    job_max_memory_bytes: int = Field(8 * 2**30, ge=1)
    job_time_limit_s: float = Field(86_400.0, gt=0, allow_inf_nan=False)
    job_model_max_bytes: int = Field(64 * 2**20, ge=0)
    job_worker_max_rss_bytes: int | None = Field(None, ge=2**20)
    job_cancel_grace_s: float = Field(1.0, gt=0, allow_inf_nan=False)
    job_watch_interval_s: float = Field(0.25, gt=0, le=10, allow_inf_nan=False)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            # pydantic's text repeats every raw input (secrets included): report names only
            raise SettingsError(_describe(exc)) from None

    def __repr_args__(self) -> Any:
        # api_keys are left out (repr=False); a password in the database URL is masked
        for name, value in super().__repr_args__():
            if name == "database_url" and isinstance(value, str):
                value = _mask_url(value)
            yield name, value

    def check_database_url(self) -> None:
        """Refuse a ``database_url`` that cannot work, before a command opens the database: a URL
        SQLAlchemy can parse, of a dialect it knows, and — for a SQLite file — in a directory that
        exists, so a bad value is one ``invalid-settings`` line, not a driver traceback at the first
        query. Called by the commands that use the database (``serve``, ``db``, ``worker``), not on
        every ``Settings()``: reading settings must not import SQLAlchemy (``langclass classify`` and
        ``--help`` start without it), and an app built on an unreachable database answers 503.
        Reachability of a server is not checked here.

        Raises:
            SettingsError: naming ``LANGCLASS_DATABASE_URL`` (the value is never echoed).
        """
        from pathlib import Path

        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError, NoSuchModuleError

        def refuse(message: str) -> SettingsError:
            return SettingsError([{"variable": "LANGCLASS_DATABASE_URL", "message": message}])

        try:
            parsed = make_url(self.database_url)
        except ArgumentError:
            raise refuse("not a SQLAlchemy database URL (expected e.g. sqlite:///./langclass.db or "
                         "postgresql+psycopg://user@host/db)") from None
        try:
            parsed.get_dialect()
        except NoSuchModuleError:
            raise refuse(f"unknown database dialect {parsed.drivername!r} (expected sqlite or postgresql)") from None
        if parsed.get_backend_name() == "sqlite":
            db = parsed.database or ""
            if db and db != ":memory:" and not db.startswith("file:"):
                folder = Path(db).expanduser().parent
                if not folder.is_dir():
                    raise refuse(f"the directory {str(folder)!r} of the SQLite file does not exist")

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    @field_validator("trusted_proxies", mode="after")
    @classmethod
    def _check_proxies(cls, proxies: list[str]) -> list[str]:
        import ipaddress

        for i, entry in enumerate(proxies):
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"entry {i} (0-based, comma-separated) is not an IP address, a network (CIDR) or *") from None
        return proxies

    @field_validator("api_keys", mode="after")
    @classmethod
    def _refuse_placeholder_keys(cls, keys: list[str]) -> list[str]:
        bad = [i for i, key in enumerate(keys) if key.lower() in _PLACEHOLDER_KEYS or len(key) < 8]
        if bad:
            which = ", ".join(str(i) for i in bad)
            raise ValueError(
                f"entr{'y' if len(bad) == 1 else 'ies'} {which} (0-based, comma-separated) "
                "is a placeholder or shorter than 8 characters"
            )
        return keys

    @property
    def auth_enabled(self) -> bool:
        """True when at least one API key is configured."""
        return bool(self.api_keys)

    def limits(self) -> Limits:
        """The :class:`~langclass.core.base.limits.Limits` every classification of this service runs under."""
        return Limits(**{name: getattr(self, name) for name in Limits.__dataclass_fields__})

    def job_limits(self) -> Any:
        """The :class:`~langclass.models.training.specs.JobLimits` every job spec is checked against."""
        from langclass.models.training.specs import JobLimits

        return JobLimits(**{name: getattr(self, name) for name in JobLimits.names()})

    @property
    def census_directory(self) -> str:
        """Where census data files go: ``census_dir``, else ``langclass-census/`` beside the SQLite
        file (``./langclass-census`` for an in-memory or non-SQLite database)."""
        if self.census_dir:
            return self.census_dir
        import os

        prefix = "sqlite:///"
        if self.database_url.startswith(prefix) and ":memory:" not in self.database_url:
            path = self.database_url[len(prefix):].split("?", 1)[0]
            if path:
                return os.path.join(os.path.dirname(path) or ".", "langclass-census")
        return os.path.join(".", "langclass-census")

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def _mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy can parse: hide everything after the scheme
        return url.split("://", 1)[0] + "://***" if "://" in url else "***"


def _describe(exc: ValidationError) -> list[dict[str, str]]:
    """``{"variable", "message"}`` per error of ``exc`` — pydantic's message without the input."""
    out = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = [str(p) for p in err.get("loc", ())]
        name = loc[0] if loc else ""
        variable = f"LANGCLASS_{name.upper()}" if name else "LANGCLASS_*"
        message = str(err.get("msg", "invalid value"))
        if message.startswith("Value error, "):
            message = message[len("Value error, "):]
        if len(loc) > 1 and name != "api_keys":
            message = f"{'.'.join(loc[1:])}: {message}"
        out.append({"variable": variable, "message": message})
    return out


def setting_for_limit(limit: str) -> str | None:
    """The environment variable that raises the limit named ``limit`` (the ``limit`` member of a
    ``LimitExceeded``), e.g. ``"max_states"`` → ``"LANGCLASS_MAX_STATES"``; None for a fixed bound."""
    return f"LANGCLASS_{limit.upper()}" if limit in Settings.model_fields else None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first call."""
    return Settings()
