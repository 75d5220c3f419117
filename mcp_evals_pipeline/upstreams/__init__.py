"""Bundled fake upstream services a task's `upstream` section can name (see upstreams/base.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_evals_pipeline.upstreams import ops_platform
from mcp_evals_pipeline.upstreams.base import FakeApi, FakeService, RecordedRequest
from mcp_evals_pipeline.upstreams.ops_platform import OpsPlatformApi
from mcp_evals_pipeline.upstreams.orders import OrdersApi

# name (a build task's `upstream.service`, a usage task's `world`) -> a factory of fresh state
SERVICES: dict[str, Callable[[], FakeApi]] = {"orders": OrdersApi, "ops-platform": OpsPlatformApi}
# name -> what checks a case's `plants` (a fake without one plants nothing)
PLANTERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"ops-platform": ops_platform.check_plants}


def check_service(name: str, what: str) -> str:
    """`name` if it is a bundled fake, else a ValueError naming the known ones (a task's typo, found at load)."""
    if name not in SERVICES:
        raise ValueError(f"unknown {what} {name!r} (known: {', '.join(sorted(SERVICES))})")
    return name


def check_plants(name: str, plants: dict[str, Any]) -> dict[str, Any]:
    """`plants` if the fake `name` can add them to its seed, else a ValueError saying why."""
    if not plants:
        return plants
    if name not in PLANTERS:
        raise ValueError(f"the world {name!r} plants nothing (worlds that do: {', '.join(sorted(PLANTERS))})")
    return PLANTERS[name](plants)


def start_service(name: str, plants: dict[str, Any] | None = None) -> FakeService:
    """A fresh running fake with its seed state (plus a case's `plants`); the caller stops it."""
    try:
        factory = SERVICES[name]
    except KeyError:
        raise KeyError(f"no bundled upstream service {name!r} (known: {', '.join(sorted(SERVICES))})") from None
    return FakeService(factory(plants) if plants else factory())


__all__ = ["SERVICES", "FakeApi", "FakeService", "RecordedRequest", "check_plants", "check_service",
           "start_service"]
