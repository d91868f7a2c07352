"""The tables schema step 10 renamed for what they measure, and the names they had before. The earlier names
are the profiler's own CSV file names, which `kvreport export --layout seed` still writes for readers who
compare with its published files."""

SEED_NAMES = {
    "allocator_memory": "kv_memory",
    "cache_tensors": "kv_memory_v2",
    "decode_cost": "kv_decode_cost_v2",
    "fragmentation": "kv_frag_v2",
    "compaction": "kv_compact_v2",
    "concurrent_capacity": "kv_capacity_v3",
    "pressure": "kv_pressure_v3",
    "interference": "kv_interference_v3",
    "crossover": "kv_crossover_v3",
}
