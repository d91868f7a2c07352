-- The replays a site shows (analysis/runs.py): the newest $max_replays.
SELECT replay_id FROM replays ORDER BY created_at DESC NULLS LAST, replay_id DESC LIMIT $max_replays
