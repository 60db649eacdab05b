"""The memory floor: the unified memory budget (execution and storage share it), the memory
store of deserialized blocks, and the split of one budget between them."""
