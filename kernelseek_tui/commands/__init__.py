"""One module per ``kernelseek`` subcommand; see ``kernelseek_tui.cli``."""
