"""The judge: static checks, build, correctness and timing of a candidate kernel.

Imports numpy and cupy only (torch only inside comparators), never textual, anthropic or duckdb.
The public entry point is ``kernelseek_tui.evaluate.api.evaluate``.
"""
