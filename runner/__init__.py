"""kvreport's runner. Its packages are the layers: core/ (torch-free: errors, the store and its schema, merge,
model facts), audit/ (token audits, on the core), measure/ (torch: models, probes, experiments; used only by
`kvreport run`), and the CLI (cli.py, commands/) composing them with ../analysis."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("kvreport")  # one source of truth: pyproject.toml
except _metadata.PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"
