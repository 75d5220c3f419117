"""Notes kept in a JSON file next to the workspace (NOTES_FILE overrides the path)."""

import json
import os
from pathlib import Path

from pydantic import BaseModel


class Note(BaseModel):
    id: int
    text: str
    pinned: bool = False


class NoteStore
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or Path(os.environ.get("NOTES_FILE", "notes.json"))

    def load(self) -> list[Note]:
        if not self.path.exists():
            return []
        return [Note.model_validate(n) for n in json.loads(self.path.read_text())]

    def save(self, notes: list[Note]) -> None:
        self.path.write_text(json.dumps([n.model_dump() for n in notes], indent=2))
