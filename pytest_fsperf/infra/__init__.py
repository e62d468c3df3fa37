"""infra."""
