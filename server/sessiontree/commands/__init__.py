"""Subcommands of the `sessiontree` command line (one module each: register(), run())."""
