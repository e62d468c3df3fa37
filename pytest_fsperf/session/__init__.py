"""The session's own state and housekeeping: the session (state.py), the record of what it
started and its removal (leftovers.py), the machine lock, output files, process trees."""
