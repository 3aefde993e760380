"""Signing in with OAuth: Vigil's own authorization server (Authlib's, on the grants that
vigil.grants keeps), the clients it knows (registered, or by their metadata documents), its
consent, and the scopes that bound what a grant's tokens may call."""
