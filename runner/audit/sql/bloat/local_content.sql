-- Valid calls on this connection that logged messages (0: nothing for the prompt-bloat analysis).
SELECT count(*) FROM _staged WHERE reason IS NULL AND NOT blank AND content IS NOT NULL;
