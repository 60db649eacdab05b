"""``strataflow bench``: experiments that reproduce the papers' figures on this machine."""
