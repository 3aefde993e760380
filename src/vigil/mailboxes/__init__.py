"""mailboxes"""
