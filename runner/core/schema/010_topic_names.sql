-- Schema version 10: tables and experiments named for what they measure, not for the iteration that
-- added them. Rows are unchanged; `kvreport export --layout seed` still writes the profiler's file names.

ALTER TABLE kv_memory_v2 RENAME TO cache_tensors;
ALTER TABLE kv_decode_cost_v2 RENAME TO decode_cost;
ALTER TABLE kv_frag_v2 RENAME TO fragmentation;
ALTER TABLE kv_compact_v2 RENAME TO compaction;
ALTER TABLE kv_capacity_v3 RENAME TO concurrent_capacity;
ALTER TABLE kv_pressure_v3 RENAME TO pressure;
ALTER TABLE kv_interference_v3 RENAME TO interference;
ALTER TABLE kv_crossover_v3 RENAME TO crossover;
ALTER TABLE kv_memory RENAME TO allocator_memory;
UPDATE experiments SET experiment = CASE experiment WHEN 'kv_memory_v2' THEN 'cache_tensors' WHEN 'kv_decode_cost_v2' THEN 'decode_cost' WHEN 'kv_frag_v2' THEN 'fragmentation' WHEN 'kv_compact_v2' THEN 'compaction' WHEN 'kv_capacity_v3' THEN 'concurrent_capacity' WHEN 'kv_pressure_v3' THEN 'pressure' WHEN 'kv_interference_v3' THEN 'interference' WHEN 'kv_crossover_v3' THEN 'crossover' WHEN 'kv_memory' THEN 'allocator_memory' END WHERE experiment IN ('kv_memory_v2', 'kv_decode_cost_v2', 'kv_frag_v2', 'kv_compact_v2', 'kv_capacity_v3', 'kv_pressure_v3', 'kv_interference_v3', 'kv_crossover_v3', 'kv_memory');
UPDATE device_state SET experiment = CASE experiment WHEN 'kv_memory_v2' THEN 'cache_tensors' WHEN 'kv_decode_cost_v2' THEN 'decode_cost' WHEN 'kv_frag_v2' THEN 'fragmentation' WHEN 'kv_compact_v2' THEN 'compaction' WHEN 'kv_capacity_v3' THEN 'concurrent_capacity' WHEN 'kv_pressure_v3' THEN 'pressure' WHEN 'kv_interference_v3' THEN 'interference' WHEN 'kv_crossover_v3' THEN 'crossover' WHEN 'kv_memory' THEN 'allocator_memory' END WHERE experiment IN ('kv_memory_v2', 'kv_decode_cost_v2', 'kv_frag_v2', 'kv_compact_v2', 'kv_capacity_v3', 'kv_pressure_v3', 'kv_interference_v3', 'kv_crossover_v3', 'kv_memory');
