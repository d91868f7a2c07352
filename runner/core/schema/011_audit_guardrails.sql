-- Schema version 11: the audit's guardrails read beside the sessions they judge. `kv_max_basis` says what the
-- KV limit is (relative to the --gpu's memory by default, or a figure given); the per-session distribution of
-- KV footprint and SPOR (p50, p90, max: each one session's own figure) sits beside the warning counts.
-- An audit without KV pricing has kv_bytes_source 'not priced' and NULL in every KV byte column.
-- Back-filled from token_audit for the audits already stored, all of them set against a fixed KV figure.
ALTER TABLE audits ADD COLUMN kv_max_basis VARCHAR;
ALTER TABLE audits ADD COLUMN session_kv_p50_bytes DOUBLE;
ALTER TABLE audits ADD COLUMN session_kv_p90_bytes DOUBLE;
ALTER TABLE audits ADD COLUMN session_kv_max_bytes DOUBLE;
ALTER TABLE audits ADD COLUMN session_spor_p50 DOUBLE;
ALTER TABLE audits ADD COLUMN session_spor_p90 DOUBLE;
ALTER TABLE audits ADD COLUMN session_spor_max DOUBLE;
UPDATE audits SET kv_max_basis = CASE WHEN kv_max_bytes = 15000000 THEN 'the token-audit article''s guardrail'
                                    ELSE 'a fixed figure' END
WHERE kv_max_bytes IS NOT NULL;
UPDATE audits SET
  session_kv_p50_bytes = d.kv_p50, session_kv_p90_bytes = d.kv_p90, session_kv_max_bytes = d.kv_max,
  session_spor_p50 = d.spor_p50, session_spor_p90 = d.spor_p90, session_spor_max = d.spor_top
FROM (
  SELECT audit_id, quantile_disc(kv_cache_bytes, 0.5) AS kv_p50, quantile_disc(kv_cache_bytes, 0.9) AS kv_p90,
         max(kv_cache_bytes) AS kv_max, quantile_disc(spor, 0.5) AS spor_p50, quantile_disc(spor, 0.9) AS spor_p90,
         max(spor) AS spor_top
  FROM token_audit GROUP BY audit_id
) d
WHERE audits.audit_id = d.audit_id;
