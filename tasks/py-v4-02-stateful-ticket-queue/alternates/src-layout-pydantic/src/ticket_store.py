"""The ticket store: plain Python, no MCP. One instance is shared by the whole server."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["open", "claimed", "closed"]


class TicketNotFound(LookupError):
    def __init__(self, ticket_id: int):
        super().__init__(f"Ticket #{ticket_id} not found")


class InvalidTransition(ValueError):
    pass


@dataclass
class Record:
    id: int
    title: str
    status: Status = "open"


@dataclass
class TicketStore:
    _records: dict[int, Record] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, title: str) -> Record:
        with self._lock:
            record = Record(id=next(self._ids), title=title)
            self._records[record.id] = record
            return record

    def active(self) -> list[Record]:
        with self._lock:
            return [r for r in sorted(self._records.values(), key=lambda r: r.id) if r.status != "closed"]

    def transition(self, ticket_id: int, allowed_from: tuple[Status, ...], to: Status) -> Record:
        with self._lock:
            record = self._records.get(ticket_id)
            if record is None:
                raise TicketNotFound(ticket_id)
            if record.status not in allowed_from:
                raise InvalidTransition(f"Ticket #{ticket_id} is {record.status}; cannot move it to {to}")
            record.status = to
            return record
