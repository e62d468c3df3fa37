"""result."""
