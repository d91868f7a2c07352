"""The iterations `kvreport run --iterations` selects from, in run order. Torch-free, so the CLI checks the
option without importing the measuring code; each experiment module names its own (runner/measure/experiments)."""

ITERATIONS = ("1", "2", "3", "audit")
