-- One of the audit's tables (or views) to one Parquet file: {columns} is distributed/copy_columns.sql's list, or
-- a list of the DB's own columns; {table} is one of the names distributed.py moves between phases.
COPY (SELECT {columns} FROM {table}) TO {path:file} (FORMAT PARQUET);
