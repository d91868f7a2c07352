-- Whatever a failed attempt at one file left in _staged (nothing, unless a later statement failed).
DELETE FROM _staged WHERE source = $source;
