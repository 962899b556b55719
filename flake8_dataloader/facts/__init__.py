"""Facts about one file, gathered in a single LibCST traversal."""
