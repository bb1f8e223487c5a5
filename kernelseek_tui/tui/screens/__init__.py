"""The app's screens and modals."""
