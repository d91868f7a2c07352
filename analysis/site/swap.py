"""The atomic folder swap: the site is built in a temporary folder beside OUT and moved in only when the
whole build succeeded, so a failed build leaves the previous site untouched.

OUT is written only when it is empty (or absent) or holds a site kvreport built: the marker file MARKER,
which lists every top-level entry the build wrote. A rebuild replaces exactly those entries and keeps
everything else (a README, a CNAME); any other folder (a home folder, `/`, a project) is refused before
anything is read or written, naming what was found in it."""
from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

from kvreport.runner.core.errors import shown
from kvreport.runner.core.scratch import scratch_dir

from .spec import BuildError

MARKER = ".kvreport-site"


def _listed(out: Path) -> set[str] | None:
    """The entries the marker says a kvreport build wrote, or None when `out` has no readable marker."""
    try:
        doc = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entries = doc.get("entries") if isinstance(doc, dict) and doc.get("kvreport") == "site" else None
    if not isinstance(entries, list):
        return None
    # Only plain names directly in OUT: a tampered marker cannot point a rebuild at ../ or at /.
    return {e for e in entries if isinstance(e, str) and e and "/" not in e and "\\" not in e
            and e not in (".", "..", MARKER)}


def check_out(out: Path) -> None:
    """Refuse an `out` that is neither empty nor a kvreport site (BuildError naming what is there)."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir():
        raise BuildError(f"--out {shown(out)}: is a file; name a folder for the site")
    try:
        names = sorted(p.name for p in out.iterdir())
    except OSError as exc:
        raise BuildError(f"--out {shown(out)}: cannot list the folder ({exc.strerror or exc})") from None
    if not names or _listed(out) is not None:
        return
    found = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise BuildError(f"--out {shown(out)}: not empty and not a site kvreport built (it holds {found}; no "
                     f"{MARKER} marker), so nothing there is replaced; give an empty or new folder")


@contextlib.contextmanager
def staging(out: Path):
    """A fresh folder beside `out` to build into; removed if the build raises. A folder a killed build
    left there (its PID no longer runs) is removed first."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = scratch_dir("build", out.parent, hidden=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def swap_in(tmp: Path, out: Path) -> None:
    """Replace what the previous build wrote in `out` (the entries its marker lists) with `tmp`, keeping
    files we did not generate (a README, a CNAME). A file in the way that no build of ours wrote is
    refused, never overwritten. The source DB may live in out/data/: it was already copied into tmp."""
    check_out(out)  # again: the folder may have changed while the site was built
    out.mkdir(parents=True, exist_ok=True)
    ours = _listed(out) or set()
    new = sorted(p.name for p in tmp.iterdir())
    clash = [n for n in new if n not in ours and ((out / n).exists() or (out / n).is_symlink())]
    if clash:
        raise BuildError(f"--out {shown(out)}: {', '.join(clash[:5])} already there and not written by a "
                         "kvreport build; move it away or give another folder")
    (tmp / MARKER).write_text(json.dumps({"kvreport": "site", "entries": new}, indent=1) + "\n", encoding="utf-8")
    trash = scratch_dir("old", out.parent, hidden=True)
    for name in sorted(ours):  # renamed, not deleted, until the new copy is in place
        if (out / name).exists() or (out / name).is_symlink():
            (out / name).rename(trash / name)
    for item in sorted(tmp.iterdir()):
        shutil.move(str(item), str(out / item.name))
    tmp.rmdir()
    shutil.rmtree(trash, ignore_errors=True)
