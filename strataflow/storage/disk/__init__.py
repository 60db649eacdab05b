"""The disk tiers: serialized blocks in files on SSD/HDD directories, the tier specs that name
them, their placement, writes and probes."""
