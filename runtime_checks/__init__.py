"""Measure, on this machine, what each flake8-dataloader finding costs.

`python -m runtime_checks --help` for the interface. Needs torch (the
`runtime` extra); the linter itself never imports this package.
"""
