-- The last call id of _content: the sliced steps (pipeline "per slice") run up to it.
SELECT max(rid) FROM _content;
