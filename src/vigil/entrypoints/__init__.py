"""Lambda handlers. functions/*/app.py re-export these so the package stays importable."""
