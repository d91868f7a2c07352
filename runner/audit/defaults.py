"""The audit defaults that `kvreport audit --help` shows: kept apart, so the help imports no other audit code."""

DEFAULT_GPU = "H100 80GB"

# DuckDB's share of memory; beyond it DuckDB spills to the scratch folder. The whole process peaks above it by
# what DuckDB does not count (Python, imports, buffers): README gives the measured figures.
DEFAULT_MEMORY_LIMIT = "350MB"
