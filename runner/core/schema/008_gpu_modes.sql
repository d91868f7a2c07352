-- Schema version 8 (issue 23): interference says why its decode part did not run in a faster mode, and the
-- cap its gather was sized under.
-- decode_fallback: "graph: <why>; static: <why>" for the modes tried before `decode_mode`, NULL when the
-- fastest mode ran. compact_cap_bytes: the most live KV bytes the gather could use (on a GPU from free
-- memory, on a CPU fixed); a gather at this cap that is still shorter than the decode part is unbalanced
-- because a balanced one does not fit.
ALTER TABLE kv_interference_v3 ADD COLUMN decode_fallback VARCHAR;
ALTER TABLE kv_interference_v3 ADD COLUMN compact_cap_bytes BIGINT;
