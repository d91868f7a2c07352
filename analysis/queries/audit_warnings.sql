-- Guardrail warnings of one audit: sessions over the SPOR or KV-footprint limit it was run with.
SELECT t.session_id,
       CASE WHEN t.spor_warning AND t.kv_warning THEN 'SPOR and KV'
            WHEN t.spor_warning THEN 'SPOR' ELSE 'KV' END AS warning,
       t.spor, a.spor_max, t.kv_cache_bytes, t.kv_cache_bytes / 1e6 AS kv_cache_mb, a.kv_max_bytes,
       CASE WHEN t.spor_warning THEN 'consolidate the system prompt: most of every request is fixed instructions' END
         AS spor_advice,
       CASE WHEN t.kv_warning THEN 'long context: evict or summarise when the session goes idle' END AS kv_advice
FROM token_audit t JOIN audits a USING (audit_id)
WHERE t.audit_id = $audit_id AND (t.spor_warning OR t.kv_warning)
ORDER BY t.kv_cache_bytes DESC, t.session_id
LIMIT 50;
