"""SQLite files as another program leaves them, for the tests of how planfold
treats a file it did not write (another application's database, a log
changed behind the store's back)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def write_sqlite(path: Path, *statements: str) -> Path:
    """Runs ``statements`` on the SQLite file at ``path`` (made if it is
    missing), commits them and closes the file; returns ``path``."""
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()
    return path
