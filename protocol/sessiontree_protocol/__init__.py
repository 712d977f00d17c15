"""Wire types of the sessiontree protocol (version 1)."""
