"""The filesystem under test: where it is mounted and which process serves it (mountinfo,
daemon lookup, a first touch with a deadline), and the backends the plugin mounts itself
(descriptions, registry, the mount lifecycle)."""
