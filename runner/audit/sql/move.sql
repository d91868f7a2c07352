-- This audit's valid calls and its rejects, as views over _staged: the metrics read them, and `persist`
-- copies them (with the audit's id) into the DB in the same transaction as everything else. Views, not
-- copies: at ten million calls every copy counts.
CREATE OR REPLACE TEMP VIEW token_calls AS
SELECT CAST(NULL AS VARCHAR) AS audit_id, CAST(NULL AS INTEGER) AS run_id, source, line, format, session_id,
       start_time, end_time, disconnected_at, provider_name, request_model, response_model, input_tokens,
       cached_input_tokens, cache_creation_input_tokens, output_tokens, system_tokens, system_tokens_source
FROM _staged WHERE reason IS NULL AND NOT blank;

CREATE OR REPLACE TEMP VIEW token_rejects AS
SELECT CAST(NULL AS VARCHAR) AS audit_id, CAST(NULL AS INTEGER) AS run_id, source, line, reason
FROM _staged WHERE reason IS NOT NULL;
