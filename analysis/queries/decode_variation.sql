-- Per run and batch: how much the step cost moves across prefix lengths, and what bounds the step.
-- A bandwidth-bound step sits near (bytes read / copy roof); a compute-bound one grows with the batch
-- (weights are read once per step whatever the batch); a launch/overhead-bound one does neither.
-- The eager mode only (the seed's setup, and the headline); decode_modes.sql sets the modes side by side.
SELECT * FROM decode_eager_variation()
ORDER BY run_id, batch_size;
