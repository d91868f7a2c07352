"""kvreport's runner: the CLI, model loading, experiments and the DuckDB store."""

__version__ = "0.1.0"
