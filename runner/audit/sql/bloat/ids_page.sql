-- A page of token ids (prompt_bloat.tokenize registers it as _ids_batch) into _ids.
INSERT INTO _ids SELECT rid, ids, n_tokens FROM _ids_batch;
