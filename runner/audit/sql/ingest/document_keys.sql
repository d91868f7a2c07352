-- Whether a file is one JSON document, and its top-level keys (format detection of a pretty-printed export).
SELECT json_valid(content), CASE WHEN json_valid(content) THEN json_keys(content) END FROM read_text($path);
