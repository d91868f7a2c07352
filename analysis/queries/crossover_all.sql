-- Every crossover row: tokens per request at which batch x KV bytes equal the weight bytes.
SELECT c.run_id, c.model, c.source, c.dtype, c.batch_size, c.crossover_tokens, c.min_tokens_kv_exceeds,
       c.crossover_total_tokens, c.kv_bytes_per_token, c.weight_bytes, c.parameters, c.n_layers, c.n_heads,
       c.n_kv_heads, c.head_dim, c.sliding_window, c.max_positions, c.exceeds_max_positions
FROM crossover c
ORDER BY c.run_id, c.source DESC, c.model, c.batch_size;
