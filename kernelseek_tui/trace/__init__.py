"""The trace: every event of a session, stored as Parquet and queried with DuckDB.

- ``schema``: the event schema (Arrow) and the ``Event`` record.
- ``writer``: ``TraceWriter``, WAL (fsync per batch) -> Parquet segments -> ``events.parquet``.
- ``reader``: ``read_session`` (Parquet plus the WAL tail, deduplicated) and ``tail_wal``.
- ``store``: ``TraceStore``, DuckDB views over a traces root and the canned queries.
- ``importers``: other tools' transcripts as trace sessions (Claude Code JSONL).

Nothing is imported here, so that importing one part never pulls in DuckDB.
"""
