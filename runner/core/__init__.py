"""The torch-free core every layer may import: errors, the DuckDB store and its schema steps, merge, and
the model facts (cache specs read from a config.json, the catalogue of published configs, the KV formula)."""
