"""The atomic folder swap: the site is built in a temporary folder beside OUT and moved in only when the
whole build succeeded, so a failed build leaves the previous site untouched."""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from .export import DATA_DIR

GENERATED_DIRS = ("assets", DATA_DIR)


@contextlib.contextmanager
def staging(out: Path):
    """A fresh folder beside `out` to build into; removed if the build raises."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".kvreport-build-", dir=out.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def swap_in(tmp: Path, out: Path) -> None:
    """Replace the generated contents of `out` with `tmp`, keeping files we did not generate
    (a README, a CNAME). The source DB may live in out/data/: it was already copied into tmp."""
    out.mkdir(parents=True, exist_ok=True)
    trash = Path(tempfile.mkdtemp(prefix=".kvreport-old-", dir=out.parent))
    for name in GENERATED_DIRS:
        if (out / name).exists():
            (out / name).rename(trash / name)  # renamed, not deleted, until the new copy is in place
    for old in out.glob("*.html"):
        old.unlink()
    for item in sorted(tmp.iterdir()):
        shutil.move(str(item), str(out / item.name))
    tmp.rmdir()
    shutil.rmtree(trash, ignore_errors=True)
