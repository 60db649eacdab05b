"""What the driver ships to executors besides tasks: source slices (lineage roots), broadcast
variables, shipped files, and the accumulators tasks send back."""
