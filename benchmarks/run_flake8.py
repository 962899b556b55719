"""flake8 with the plugins of some distributions left out: `run_flake8.py --without flake8-dataloader -- ARGS`."""

import sys

import flake8.plugins.finder as finder
from flake8.main.cli import main


def _without(names):
    original = finder._find_importlib_plugins

    def find():
        return (plugin for plugin in original() if plugin.package not in names)

    finder._find_importlib_plugins = find


if __name__ == "__main__":
    argv = sys.argv[1:]
    excluded = set()
    while argv and argv[0] == "--without":
        excluded.add(argv[1])
        argv = argv[2:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    _without(excluded)
    sys.exit(main(argv))
