"""The store's two backends, each one object over every capability's adapter."""
