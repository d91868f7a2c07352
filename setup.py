"""One build step on top of pyproject.toml: the built package records the git commit it was built from, so a
plain `pip install .` (no git at run time) still says which code measured a run. The commit goes into a
generated module, kvreport/runner/_build_commit.py, written into the build only (never into the checkout);
runner/measure/environment.py reads it back. Built from a tarball without git, the module says None."""
from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
MODULE = ("kvreport", "runner", "_build_commit.py")


def checkout_commit() -> str | None:
    """HEAD of the git checkout this file sits at the top of (`<sha>+dirty` with local changes to tracked
    files); None without git or when the folder is not its own checkout (an sdist unpacked in another repo)."""
    def git(*args) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True, timeout=10,
                              check=False)
    try:
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != HERE:
            return None
        sha = git("rev-parse", "HEAD").stdout.strip()
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (sha + ("+dirty" if dirty else "")) if sha else None


class build_py_with_commit(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib, *MODULE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text('"""Written by setup.py at build time: the git commit this package was built from."""\n'
                          f"COMMIT = {checkout_commit()!r}\n", encoding="utf-8")

    def get_outputs(self, include_bytecode=True):
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib, *MODULE))]


setup(cmdclass={"build_py": build_py_with_commit})
