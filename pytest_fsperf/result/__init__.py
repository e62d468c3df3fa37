"""What a workload produced: plain frozen data, serialisable to JSON."""
