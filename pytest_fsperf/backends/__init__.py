"""Filesystems the plugin mounts itself: descriptions, registry, mount lifecycle."""
