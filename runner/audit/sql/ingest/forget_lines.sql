-- The file's lines are not needed once its calls are in _staged (the next file's read_lines replaces them).
DROP TABLE IF EXISTS _lines;
