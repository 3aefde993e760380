"""Attachments: file bytes in S3, their metadata in the table."""
