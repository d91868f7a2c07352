"""The log files an audit reads: which paths the command line names, and each file's bytes as the readers see
them (gzip and zstd decompressed as they are read; damage is an AuditInputError naming the file)."""
from __future__ import annotations

import errno
import glob
import gzip
import io
import os
import re
import shutil
import stat
import tempfile
import zlib
from typing import Any
from pathlib import Path

from ..core.errors import UserError
from ..core.errors import shown


class AuditInputError(UserError):
    """A file the audit cannot read at all (the message names it and says why)."""


def expand_paths(args: list[str | Path], exclude: tuple[Path, ...] = ()) -> list[Path]:
    """The log files named on the command line, in order, each once: a file as given; a folder, every
    file under it (sorted; hidden ones skipped); a glob the shell did not expand (`'logs/2026-11-*.gz'`),
    its matches (sorted). A folder or glob with no file is an error naming it. `exclude`: the DB's own files.

    A file is counted once however it is reached (two spellings, a symlink): files are told apart by their
    resolved path. Folders are walked following symlinks, each real folder once, so a symlink loop is
    followed once and never recursed into again."""
    out: dict[str, Path] = {}
    skip = {os.path.realpath(p) for p in exclude}
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found = _walk(path)
            if not found:
                raise AuditInputError(f"{shown(path)}: a folder with no log files in it")
        elif not os.path.lexists(path) and any(c in str(arg) for c in "*?["):
            found = _glob(str(arg))
            if not found:
                raise AuditInputError(f"{shown(arg)}: no file matches")
        else:
            found = [path]
        for f in found:
            real = os.path.realpath(f)  # never raises, loops included (detect names a looping one)
            if real not in skip and real not in out:
                out[real] = f
    return list(out.values())


def _walk(top: Path) -> list[Path]:
    """Every non-hidden file under `top`, sorted; each real folder visited once (symlink loops end)."""
    seen: set[tuple[int, int]] = set()
    found = []
    for root, dirs, files in os.walk(top, followlinks=True):
        try:
            st = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if not name.startswith(".") and os.path.isfile(os.path.join(root, name)):
                found.append(Path(root) / name)
    return sorted(found)


def _glob(pattern: str) -> list[Path]:
    """A glob's files. Without `**` the standard glob; with it, our own walk from the part before the
    first wildcard (glob's `**` follows symlink loops until the path is too long: exponential)."""
    if "**" not in pattern:
        return sorted(Path(f) for f in glob.glob(pattern) if os.path.isfile(f))
    parts = Path(pattern).parts
    base_parts = []
    for part in parts:
        if any(c in part for c in "*?["):
            break
        base_parts.append(part)
    base = Path(*base_parts) if base_parts else Path(".")
    if not base.is_dir():
        return []
    regex = re.compile(_glob_regex(pattern))
    return sorted(f for f in _walk(base) if regex.fullmatch(str(f) if base_parts else os.path.normpath(f)))


def _glob_regex(pattern: str) -> str:
    """A glob pattern as a regex on paths: `**/` any folders (none too), `*` and `?` within one name."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1:j]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
                i = j + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def compression(path: Path) -> str:
    """gzip, zstd or none: from the file's first bytes, not its name (DuckDB's reader is told which)."""
    with open(path, "rb") as f:
        head = f.read(4)
    return "gzip" if head[:2] == b"\x1f\x8b" else "zstd" if head == b"\x28\xb5\x2f\xfd" else "none"


class _ZstdStream(io.RawIOBase):
    """zstd frames decompressed one small piece of input at a time (a bomb cannot fill memory), with a
    truncated last frame an error: zstandard's stream reader ends quietly where the data stops."""

    def __init__(self, path: Path):
        import zstandard  # optional: only a .zst log needs it (open_log says so when it is missing)

        self._zstd = zstandard
        self._f = open(path, "rb")
        self._obj: Any = None   # the decompressor of the frame being read
        self._pending = b""     # decompressed, not yet returned
        self._started = False   # input of the current frame seen

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._pending:
            data = self._f.read(4096)
            if not data:
                if self._started:
                    raise EOFError("the last zstd frame is truncated")
                return 0
            while data:
                if self._obj is None:
                    self._obj = self._zstd.ZstdDecompressor().decompressobj()
                self._started = True
                self._pending += self._obj.decompress(data)
                if not self._obj.eof:
                    break
                data, self._obj, self._started = self._obj.unused_data, None, False
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._f.close()
        super().close()


class _Checked(io.RawIOBase):
    """A decompressing stream whose damage (a bad CRC, a truncated end, a broken frame) is an
    AuditInputError naming the file, never a partial read."""

    def __init__(self, inner, path: Path, kind: str):
        self._inner, self._path, self._kind = inner, path, kind

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        try:
            data = self._inner.read(len(buf))
        except AuditInputError:
            raise
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise AuditInputError(f"{shown(self._path)}: corrupt or truncated {self._kind} data "
                                  f"({_first(exc)}); nothing of it was audited") from None
        except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError and kin
            if type(exc).__module__.split(".")[0] != "zstandard":
                raise
            raise AuditInputError(f"{shown(self._path)}: corrupt {self._kind} data ({_first(exc)}); nothing of "
                                  "it was audited") from None
        n = len(data)
        buf[:n] = data
        return n

    def close(self) -> None:
        self._inner.close()
        super().close()


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__


def open_log(path: Path) -> io.BufferedIOBase:
    """The file's bytes as DuckDB's reader sees them: gzip and zstd are decompressed as they are read, and
    damaged compressed data raises AuditInputError naming the file."""
    kind = compression(path)
    if kind == "gzip":
        return io.BufferedReader(_Checked(gzip.open(path, "rb"), path, kind), 1 << 20)
    if kind == "zstd":
        try:
            import zstandard  # noqa: F401 - only whether it is installed
        except ImportError:
            raise AuditInputError(f"{shown(path)}: zstd-compressed, and the zstandard package is not installed") \
                from None
        return io.BufferedReader(_Checked(_ZstdStream(path), path, kind), 1 << 20)
    return open(path, "rb")


def _check_readable(path: Path) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise AuditInputError(f"{shown(path)}: a symlink to a file that does not exist") from None
        raise AuditInputError(f"{shown(path)}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise AuditInputError(f"{shown(path)}: a symlink loop (it points back at itself)") from None
        raise AuditInputError(f"{shown(path)}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise AuditInputError(f"{shown(path)}: is a folder; give the log files themselves")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a pipe or FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        # Read once by detection, once by the audit: a stream cannot be read twice, and a device never ends.
        raise AuditInputError(f"{shown(path)}: {kind}, not a regular file; save the log to a file and audit that")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise AuditInputError(f"{shown(path)}: cannot read ({exc.strerror or exc})") from None


def _plain_copy(path: Path, tmpdir: str) -> Path:
    """A decompressed copy of a compressed file, for the readers that do not decompress (read_text)."""
    out = Path(tempfile.mkstemp(prefix="plain-", dir=tmpdir)[1])
    with open_log(path) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 16 << 20)
    return out
