"""Bundled fake upstream services a task's `upstream` section can name (see upstreams/base.py)."""

from __future__ import annotations

from collections.abc import Callable

from mcp_evals_pipeline.upstreams.base import FakeApi, FakeService, RecordedRequest
from mcp_evals_pipeline.upstreams.ops_platform import OpsPlatformApi
from mcp_evals_pipeline.upstreams.orders import OrdersApi

# name (a build task's `upstream.service`, a usage task's `world`) -> a factory of fresh state
SERVICES: dict[str, Callable[[], FakeApi]] = {"orders": OrdersApi, "ops-platform": OpsPlatformApi}


def check_service(name: str, what: str) -> str:
    """`name` if it is a bundled fake, else a ValueError naming the known ones (a task's typo, found at load)."""
    if name not in SERVICES:
        raise ValueError(f"unknown {what} {name!r} (known: {', '.join(sorted(SERVICES))})")
    return name


def start_service(name: str) -> FakeService:
    """A fresh running fake with empty state; the caller stops it."""
    try:
        factory = SERVICES[name]
    except KeyError:
        raise KeyError(f"no bundled upstream service {name!r} (known: {', '.join(sorted(SERVICES))})") from None
    return FakeService(factory())


__all__ = ["SERVICES", "FakeApi", "FakeService", "RecordedRequest", "check_service", "start_service"]
