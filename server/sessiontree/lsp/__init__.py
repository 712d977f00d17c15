"""The sessiontree daemon: a pygls server speaking the sessiontree protocol over stdio."""
