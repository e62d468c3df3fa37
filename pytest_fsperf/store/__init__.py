"""A real S3-compatible server for tests and examples (MinIO on 127.0.0.1)."""
