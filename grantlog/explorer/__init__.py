"""The explorer (``grantlog explore``): a local web page over the public answer modules where
a security engineer edits rules, asks, and sees proofs as graphs (docs/explorer.md)."""
