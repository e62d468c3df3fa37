"""The orchestration above the engines and meters: the work directory and its cold state,
rounds, the measured window, A/B pairs and the release gate, many clients, hosts."""
