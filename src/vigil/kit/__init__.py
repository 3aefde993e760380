"""The plumbing every capability shares, written once: records, the unit of work,
idempotency, retry on conflict, cursors, scan pages, AWS error translation and the tool
scaffolding."""
