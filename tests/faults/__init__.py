"""Faults injected at the botocore layer into every mutating tool of the catalog."""
