"""Settings from the command line and ini files, each value checked by its parser (parse.py)
and frozen (config.py), every error naming where the value came from."""
