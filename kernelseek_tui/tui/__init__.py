"""The Textual app: the only package of kernelseek_tui that imports textual."""
