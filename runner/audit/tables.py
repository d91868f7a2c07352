"""Tables of token audits. Created by runner/store.py with every other table; run_id is declared here
(NULL for a standalone `kvreport audit`, the run's id for the demo audit inside `kvreport run`).

Column names follow the OpenTelemetry GenAI conventions where one exists:
    gen_ai.usage.input_tokens               -> input_tokens  (ALL input tokens, cached ones included)
    gen_ai.usage.cache_read.input_tokens    -> cached_input_tokens
    gen_ai.usage.cache_creation.input_tokens -> cache_creation_input_tokens
    gen_ai.usage.output_tokens              -> output_tokens
    gen_ai.conversation.id                  -> session_id
    gen_ai.provider.name / gen_ai.request.model / gen_ai.response.model -> provider_name, request_model,
                                               response_model
Each provider's own convention is converted on the way in (runner/audit/sql/ingest_*.sql), so no query
downstream needs to know where a row came from.
"""

TABLES = {
    # One row per audit: what was read, how it was priced, the fleet-wide figures.
    "audits": """
        audit_id VARCHAR NOT NULL, run_id INTEGER, created_at TIMESTAMP, sources VARCHAR, format VARCHAR,
        model VARCHAR, kv_bytes_per_token DOUBLE, kv_bytes_source VARCHAR, kv_bytes_detail VARCHAR,
        n_calls BIGINT, n_sessions BIGINT, n_rejects BIGINT,
        input_tokens BIGINT, cached_input_tokens BIGINT, output_tokens BIGINT, system_tokens BIGINT,
        overall_pcer DOUBLE, overall_spor DOUBLE, spor_coverage DOUBLE, spor_reason VARCHAR,
        leakage_index DOUBLE, leakage_reason VARCHAR, idle_timeout_s DOUBLE,
        kv_byte_seconds DOUBLE, idle_kv_byte_seconds DOUBLE, window_start TIMESTAMP, window_end TIMESTAMP,
        memory_bytes BIGINT, memory_source VARCHAR, tokenizer VARCHAR,
        spor_max DOUBLE, kv_max_bytes BIGINT, n_spor_warnings BIGINT, n_kv_warnings BIGINT,
        content_calls BIGINT, bloat_reason VARCHAR, duration_s DOUBLE""",
    # Every valid call, normalised.
    "token_calls": """
        audit_id VARCHAR NOT NULL, run_id INTEGER, source VARCHAR, line BIGINT, format VARCHAR,
        session_id VARCHAR, start_time TIMESTAMP, end_time TIMESTAMP, disconnected_at TIMESTAMP,
        provider_name VARCHAR, request_model VARCHAR, response_model VARCHAR,
        input_tokens BIGINT, cached_input_tokens BIGINT, cache_creation_input_tokens BIGINT,
        output_tokens BIGINT, system_tokens BIGINT, system_tokens_source VARCHAR""",
    # Lines that could not be used, with why.
    "token_rejects": "audit_id VARCHAR NOT NULL, run_id INTEGER, source VARCHAR, line BIGINT, reason VARCHAR",
    # Per session.
    "token_audit": """
        audit_id VARCHAR NOT NULL, run_id INTEGER, session_id VARCHAR, n_calls BIGINT,
        input_tokens BIGINT, cached_input_tokens BIGINT, system_tokens BIGINT, output_tokens BIGINT,
        pcer DOUBLE, spor DOUBLE, spor_reason VARCHAR, context_tokens BIGINT, kv_cache_bytes DOUBLE,
        first_seen TIMESTAMP, last_activity TIMESTAMP, disconnected_at TIMESTAMP,
        kv_byte_seconds DOUBLE, idle_kv_byte_seconds DOUBLE, spor_warning BOOLEAN, kv_warning BOOLEAN""",
    # KV bytes held over time (no eviction), split into active and idle (past the idle timeout).
    "token_leakage": """
        audit_id VARCHAR NOT NULL, run_id INTEGER, sample INTEGER, t TIMESTAMP, offset_s DOUBLE,
        held_bytes DOUBLE, idle_bytes DOUBLE, sessions_held BIGINT, sessions_idle BIGINT""",
    # What evicting a session's KV `ttl_s` after its last activity would give back (ttl_s NULL: never).
    "token_ttl_sweep": """
        audit_id VARCHAR NOT NULL, run_id INTEGER, ttl_s DOUBLE, held_byte_seconds DOUBLE,
        freed_byte_seconds DOUBLE, freed_share DOUBLE, mean_held_bytes DOUBLE, peak_held_bytes DOUBLE,
        freed_bytes_at_peak DOUBLE, recompute_tokens BIGINT, evicted_sessions BIGINT,
        capacity_multiplier DOUBLE, memory_bytes BIGINT, memory_source VARCHAR,
        active_sessions_fit BIGINT, extra_sessions BIGINT""",
    # Prompt bloat per session (only where message content was logged).
    "token_bloat": """
        audit_id VARCHAR NOT NULL, run_id INTEGER, session_id VARCHAR, n_calls BIGINT, n_pairs BIGINT,
        input_tokens BIGINT, cached_input_tokens BIGINT,
        prompt_tokens BIGINT, reusable_tokens BIGINT, stable_prefix_tokens BIGINT,
        actual_pcer DOUBLE, achievable_pcer DOUBLE, stable_prefix_pcer DOUBLE, token_reason VARCHAR,
        broken_pairs BIGINT, diverge_line BIGINT, diverge_offset_chars BIGINT, diverge_in VARCHAR,
        diverge_context VARCHAR, diverge_prev VARCHAR, diverge_next VARCHAR""",
    # Instructions sent again and again in the new part of a session's turns.
    "token_repeats": """
        audit_id VARCHAR NOT NULL, run_id INTEGER, session_id VARCHAR, instruction VARCHAR,
        n_turns BIGINT, also_in_system BOOLEAN, chars BIGINT, tokens BIGINT""",
}
