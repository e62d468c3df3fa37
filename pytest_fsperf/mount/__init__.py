"""Where the filesystem under test is, and which process serves it."""
