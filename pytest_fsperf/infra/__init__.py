"""The bottom stage, for every other: process trees, the leftovers record and its watchdog, the
machine lock, safe output and input files, redaction, the mount table and the first touch."""
