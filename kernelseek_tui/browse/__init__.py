"""What the app shows, computed without Textual: transcript rows, candidate timelines,
benchmark rows, a session loaded for browsing. The TUI is one client; tests are another."""
