-- The (provider, response model, request model) of one call: one big log of one model is the common case.
SELECT provider_name, response_model, request_model FROM _calls LIMIT 1;
