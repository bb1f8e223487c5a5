"""KernelSeek TUI: make a CUDA kernel faster with a coding agent inside a verifiable harness."""

__version__ = "0.1.0"
