"""Tiny JSON-file note store with atomic writes."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path


def utcnow() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Note:
    id: str
    title: str
    content: str
    tags: list[str] = field(default_factory=list)
    pinned: bool = False
    created: str = field(default_factory=utcnow)
    modified: str = field(default_factory=utcnow)

    def render(self) -> str:
        head = f"[{self.id}] {self.title}" + (" (pinned)" if self.pinned else "")
        tags = f"\ntags: {', '.join(self.tags)}" if self.tags else ""
        return f"{head}{tags}\nmodified: {self.modified}\n\n{self.content}".rstrip() + "\n"

    def one_line(self) -> str:
        tags = f"  [{', '.join(self.tags)}]" if self.tags else ""
        pin = "* " if self.pinned else "  "
        return f"{pin}{self.id}  {self.title}{tags}"


class NoteNotFound(KeyError):
    pass


class NoteStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._notes: dict[str, Note] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        for item in raw.get("notes", []):
            note = Note(**item)
            self._notes[note.id] = note

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"notes": [asdict(n) for n in self._notes.values()]}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".notes-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2)
        os.replace(tmp, self.path)

    def create(self, title: str, content: str, tags: list[str]) -> Note:
        with self._lock:
            note = Note(id=uuid.uuid4().hex[:8], title=title, content=content, tags=sorted(set(tags)))
            self._notes[note.id] = note
            self._save()
            return note

    def get(self, note_id: str) -> Note:
        with self._lock:
            try:
                return self._notes[note_id]
            except KeyError:
                raise NoteNotFound(note_id) from None

    def update(self, note_id: str, **changes: object) -> Note:
        with self._lock:
            note = self.get(note_id)
            for key, value in changes.items():
                setattr(note, key, value)
            note.modified = utcnow()
            self._save()
            return note

    def delete(self, note_id: str) -> Note:
        with self._lock:
            note = self.get(note_id)
            del self._notes[note_id]
            self._save()
            return note

    def all(self) -> list[Note]:
        with self._lock:
            return sorted(self._notes.values(), key=lambda n: (not n.pinned, n.modified), reverse=False)

    def search(self, text: str, tag: str | None) -> list[Note]:
        words = text.lower().split()
        hits = []
        for note in self.all():
            if tag and tag not in note.tags:
                continue
            hay = f"{note.title}\n{note.content}\n{' '.join(note.tags)}".lower()
            if all(w in hay for w in words):
                hits.append(note)
        return hits
