"""Kahuna in the browser (docs/WEB.md)."""
