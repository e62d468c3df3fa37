"""Saved runs on disk: where they are kept, reading them (each checked), naming new ones."""
