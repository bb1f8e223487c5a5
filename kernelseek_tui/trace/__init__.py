"""The trace: one row per event, WAL then Parquet, queried with DuckDB (see schema.py)."""
