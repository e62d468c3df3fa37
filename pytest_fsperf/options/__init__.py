"""The first stage: options read and checked (config.py), the marker read into a frozen plan
(plan.py)."""
