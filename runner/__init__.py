"""kvreport's runner: the CLI, model loading, experiments and the DuckDB store."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("kvreport")  # one source of truth: pyproject.toml
except _metadata.PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"
