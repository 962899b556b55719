"""Across files: the linted file's imports of its own project, resolved, read and summarised."""
