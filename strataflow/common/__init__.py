"""Floor 1: what every layer needs and that imports nothing of strataflow above it: value checks and
configuration errors, logging, partition values (batches), retry rules, private files."""
