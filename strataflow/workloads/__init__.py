"""The papers' workloads on the strataflow API, and HiBench-like data generators."""
