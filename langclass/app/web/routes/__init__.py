"""The routers the app mounts, in order. Later issues append their router here (one line each)."""

from __future__ import annotations

from fastapi import APIRouter

from ..problems import router as problems_router
from .batch import router as batch_router
from .census import router as census_router
from .health import router as health_router
from .jobs import router as jobs_router
from .languages import router as languages_router
from .sweeps import router as sweeps_router

ROUTERS: list[APIRouter] = [
    health_router,
    batch_router,
    languages_router,
    jobs_router,
    census_router,
    sweeps_router,
    problems_router,
]
