-- Without --tokenizer there are no token ids: no prefix in tokens (bloat/per_session.sql reads it empty).
CREATE OR REPLACE TEMP TABLE _lcp_tokens (rid BIGINT, lcp_tokens BIGINT);
