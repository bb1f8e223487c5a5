"""The app's widgets, one idea per file."""
