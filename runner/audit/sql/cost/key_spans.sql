-- Each (provider, response model, request model) of the calls on this connection, with its calls, first
-- and last time, and whether any call has no time: one share's, which dollars.merge_keys adds up.
SELECT provider_name, response_model, request_model, count(*),
       min(coalesce(start_time, end_time)), max(coalesce(start_time, end_time)),
       bool_or(coalesce(start_time, end_time) IS NULL)
FROM _calls GROUP BY ALL;
