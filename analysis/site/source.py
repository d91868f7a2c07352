"""The DB a build reads: validated and at the current schema (the store migrates a temporary copy of an
older file; the original is never written)."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from kvreport.runner.core.store import current_schema_copy


@contextlib.contextmanager
def current_db(db: Path) -> Iterator[Path]:
    """The path of `db` at the current schema (a migrated temporary copy for an older file)."""
    with current_schema_copy(db) as path:
        yield Path(path)
