"""HTTP routers of the ingest service."""
