"""What a run shows: the terminal table, JUnit properties, the JSON file."""
