"""sessiontree: browse and steer coding-agent session trees."""

__version__ = "0.1.0"
