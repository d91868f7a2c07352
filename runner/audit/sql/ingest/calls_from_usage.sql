-- The common end of the ingest_<shape>.sql readers that fill _shape (one row per line, token counts still
-- as the log's text): convert, check, and append to _staged. Each reader has already applied its
-- provider's convention as `includes_cache`:
--   true   s_input is the whole input and s_cached a part of it (OpenAI, LiteLLM): input = s_input
--   false  s_input excludes cache reads and writes (Anthropic, Langfuse): input = s_input + s_cached + s_write
-- A row that is `skip` (not a call, e.g. a Langfuse span) is kept as a blank line: neither call nor reject.
INSERT INTO _staged BY NAME
WITH {include:ingest/usage_calls};

DROP TABLE _shape;
