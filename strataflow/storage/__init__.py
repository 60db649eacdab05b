"""The intermediate-data cache: block ids and the block manager."""
