"""One module per area; each registers its handlers in `setup(server)`."""
