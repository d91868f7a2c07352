-- The audit is stored whole: its figures, calls and rejects become visible together (engine.persist).
COMMIT;
