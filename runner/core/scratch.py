"""Files kvreport makes for itself: scratch folders named with their owner's PID (the next start removes what a
killed process left), and a new DB file created atomically beside the one the user named."""
from __future__ import annotations

import atexit
import contextlib
import errno
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import duckdb

from .errors import StoreError, UserError, shown

SCRATCH_PREFIX = "kvreport-"


def scratch_dir(kind: str, parent: str | os.PathLike | None = None, hidden: bool = False) -> Path:
    """A new folder `[.]kvreport-KIND-PID-XXXX` in `parent` (default: the temp folder). Stale ones of the
    same kind (their PID no longer runs) are removed first: a process killed with -9 cleans nothing up."""
    parent = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    prefix = ("." if hidden else "") + f"{SCRATCH_PREFIX}{kind}-"
    clean_stale(parent, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


_PROCESS_DIRS: dict[tuple[str, int], Path] = {}


def process_scratch_dir(kind: str) -> Path:
    """One folder `kvreport-KIND-PID-XXXX` in the temp folder for the whole process: made on first use,
    removed when the process exits (one killed with -9 leaves it to the next start's clean_stale). Keyed by
    PID too, so a forked child makes its own and never removes its parent's."""
    key = (kind, os.getpid())
    if key not in _PROCESS_DIRS or not _PROCESS_DIRS[key].is_dir():
        folder = scratch_dir(kind)
        _PROCESS_DIRS[key] = folder
        atexit.register(_remove_if_mine, folder, os.getpid())
    return _PROCESS_DIRS[key]


def _remove_if_mine(folder: Path, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def clean_stale(parent: Path, prefix: str) -> None:
    """Remove `prefix` + PID + '-' ... entries in `parent` that provably belong to a dead kvreport process of
    this user: the name carries the PID, the PID no longer runs, and the entry is ours (same owner)."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    pattern = re.compile(re.escape(prefix) + r"(\d+)-[A-Za-z0-9_]+(\.duckdb(\.wal)?)?$")
    for entry in entries:
        m = pattern.match(entry.name)
        if not m or _pid_alive(int(m.group(1))):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid() or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            continue


class DBAppeared(StoreError):
    """The DB file did not exist when we began creating it, and does now: another process made it."""


@contextlib.contextmanager
def db_file(path: str | os.PathLike) -> Iterator[Path]:
    """The DB file to write into: `path` itself when it exists, else new_db_file's temporary file, linked into
    place when the block succeeds. A UserError raised inside names `path`, never the temporary name, and an
    interrupted DuckDB statement comes out as KeyboardInterrupt."""
    path = Path(path)
    with (new_db_file(path) if not path.exists() else contextlib.nullcontext(path)) as where:
        try:
            yield where
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except UserError as exc:
            if where == path:
                raise
            raise type(exc)(str(exc).replace(str(where), str(path))) from None  # the user's file, not ours


@contextlib.contextmanager
def new_db_file(path: str | os.PathLike) -> Iterator[Path]:
    """Create the DB file `path` atomically: the caller fills the yielded temporary file beside it (and
    closes it); on success it is linked into place only if `path` still does not exist (os.link never
    replaces), else StoreError. On any failure only the temporary file, ours, is removed: a file at `path`
    that another process made meanwhile is never touched."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise StoreError(f"{shown(path)}: folder {shown(parent)} does not exist" if not parent.exists()
                         else f"{shown(path)}: {shown(parent)} is a file, not a folder")
    prefix = f".{SCRATCH_PREFIX}new-"
    clean_stale(parent, prefix)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}-", suffix=".duckdb", dir=parent)
    except OSError as exc:
        raise StoreError(f"{shown(path)}: cannot create the DB file ({exc.strerror or exc})") from None
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # DuckDB makes the file itself (an empty file is not a DB); the name stays ours by its PID
    try:
        yield tmp
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise DBAppeared(f"{shown(path)}: another process created this DB file while this one worked; "
                             "nothing was stored (run again: it adds to that file)") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
                raise StoreError(f"{shown(path)}: cannot create the DB file ({exc.strerror or exc})") from None
            if path.exists():  # a file system without hard links: the narrowest check-then-rename there is
                raise DBAppeared(f"{shown(path)}: another process created this DB file while this one "
                                 "worked; nothing was stored") from None
            os.rename(tmp, path)
    finally:
        for mine in (tmp, Path(str(tmp) + ".wal")):
            with contextlib.suppress(OSError):
                mine.unlink()
