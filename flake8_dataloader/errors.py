"""What every layer may raise or check, importable without LibCST."""

# Set in the environment (the test suite does), our own bugs are re-raised instead of logged.
STRICT_ENV = "FLAKE8_DATALOADER_STRICT"


class ParseFailure(Exception):
    """LibCST could not (or must not) parse the file; it raises more than ParserSyntaxError on valid code."""


class BudgetExceeded(Exception):
    """A file's analysis took more flow steps than its work budget: the file yields no findings."""
