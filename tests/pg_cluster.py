"""A throwaway PostgreSQL cluster for the tests and the benchmarks.

Theory of operation
-------------------
``Cluster`` runs the PostgreSQL server that is installed on the machine
(``pg_config --bindir``, or ``PLANFOLD_PG_BINDIR``): ``initdb`` into a new
temporary folder, ``pg_ctl start`` with the server listening only on a unix
socket in that folder, ``pg_ctl stop`` and the folder removed at the end. The
server refuses to run as root, so when this process is root every server
command runs as the ``postgres`` user (``runuser``) and the folder belongs to
that user; as anyone else the commands run as they are.

``url()`` is a ``postgresql://`` URL for the socket; ``schema_url(name)``
points the connection's ``search_path`` at a schema of its own, which is how
each test gets an empty store without a database of its own.

Nothing here skips: a server that cannot be set up or started raises
``ClusterError`` with the server's log, and the tests that need it fail.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

import psycopg

__all__ = ["Cluster", "ClusterError", "bindir"]


class ClusterError(RuntimeError):
    """The throwaway server could not be set up, started or stopped."""


def bindir() -> Path:
    """The folder of ``initdb``, ``pg_ctl`` and ``postgres``: ``PLANFOLD_PG_BINDIR``,
    else what ``pg_config --bindir`` says, else Debian's newest
    ``/usr/lib/postgresql/N/bin``."""
    configured = os.environ.get("PLANFOLD_PG_BINDIR")
    if configured:
        return Path(configured)
    try:
        done = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True, timeout=30)
        found = Path(done.stdout.strip())
        if (found / "initdb").exists():
            return found
    except (OSError, subprocess.SubprocessError):
        pass
    versions = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb") if p.parts[-3].isdigit()]
    if versions:
        return max(versions, key=lambda folder: int(folder.parts[-2]))
    raise ClusterError(
        "no PostgreSQL server found: install it (Debian: apt-get install postgresql) or set PLANFOLD_PG_BINDIR"
    )


class Cluster:
    """One throwaway server (see the module docstring)."""

    def __init__(self, *, fsync: bool = True, settings: dict[str, str] | None = None) -> None:
        self.bin = bindir()
        self.as_postgres = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="planfold-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.settings = {
            "listen_addresses": "''",
            "unix_socket_directories": f"'{self.root}'",
            "fsync": "on" if fsync else "off",
            "max_connections": "120",
            **(settings or {}),
        }
        self.running = False
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-N")
        conf = "".join(f"{name} = {value}\n" for name, value in self.settings.items())
        self._write(self.data / "postgresql.auto.conf", conf)
        atexit.register(self.destroy)

    def _command(self, program: str, *args: str) -> list[str]:
        command = [str(self.bin / program), *args]
        return ["runuser", "-u", "postgres", "--", *command] if self.as_postgres else command

    def _run(self, program: str, *args: str, timeout: float = 120) -> str:
        try:
            command = self._command(program, *args)
            done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ClusterError(f"{program} failed to run: {exc}\n{self.server_log()}") from exc
        if done.returncode != 0:
            raise ClusterError(f"{program} {' '.join(args)} failed:\n{done.stdout}{done.stderr}\n{self.server_log()}")
        return done.stdout

    def _write(self, path: Path, text: str) -> None:
        path.write_text(text, encoding="utf-8")
        if self.as_postgres:
            shutil.chown(path, "postgres", "postgres")

    def server_log(self) -> str:
        """The last lines the server wrote."""
        try:
            lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
            return "server log:\n" + "\n".join(lines[-40:])
        except OSError:
            return "(no server log)"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "120", "start")
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: no shutdown checkpoint, as a crash)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "120", "stop")
        self.running = False

    def url(self, database: str = "postgres", **options: str) -> str:
        """A URL for the server's socket (extra libpq parameters as keywords)."""
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in {"host": str(self.root), **options}.items())
        return f"postgresql://postgres@/{database}?{query}"

    def schema_url(self, schema: str, database: str = "postgres") -> str:
        """A URL whose ``search_path`` is ``schema`` (created if it is missing)."""
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        return self.url(database, options=f"-c search_path={schema}")

    def drop_schema(self, schema: str, database: str = "postgres") -> None:
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    def destroy(self) -> None:
        """Stop the server if it runs and remove its folder. Idempotent."""
        if self.running:
            with contextlib.suppress(ClusterError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Cluster:
        """Start the server for a ``with`` block (destroyed if it cannot start)."""
        try:
            self.start()
        except BaseException:
            self.destroy()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()
