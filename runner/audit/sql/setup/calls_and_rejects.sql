-- This audit's valid calls and its rejects, as views over _staged: the metrics read them, and the store
-- steps (store/call_rows_*.sql, store/rejects.sql) write them, with the audit's id, into the DB's tables.
-- Views, not copies: at ten million calls every copy counts. Named apart from the DB's token_calls and
-- token_rejects, which they must never shadow.
CREATE OR REPLACE TEMP VIEW _calls AS
SELECT source, line, format, session_id,
       start_time, end_time, disconnected_at, provider_name, request_model, response_model, input_tokens,
       cached_input_tokens, cache_creation_input_tokens, output_tokens, system_tokens, system_tokens_source
FROM _staged WHERE reason IS NULL AND NOT blank;

CREATE OR REPLACE TEMP VIEW _rejects AS
SELECT source, line, reason
FROM _staged WHERE reason IS NOT NULL;
