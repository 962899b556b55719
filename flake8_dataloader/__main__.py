"""The `flake8-dataloader` command (also `python -m flake8_dataloader`): fix, rule, docs.

`fix` hands its arguments to the fix command, whose options are flake8's. `rule` prints a
rule's page from the rule's docstring, so it works from an installed wheel, where docs/ is
absent. `docs` regenerates docs/rules/*.md, and writes only inside this project's own
checkout (or under --output).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__

PROG = "flake8-dataloader"


def is_checkout(root: Path) -> bool:
    """``root`` is a checkout of this project: its package and its docs beside it."""
    pyproject = root / "pyproject.toml"
    return (
        (root / "flake8_dataloader" / "rules").is_dir()
        and pyproject.is_file()
        and 'name = "flake8-dataloader"' in pyproject.read_text(encoding="utf-8")
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=PROG,
        description="flake8-dataloader's own commands (`python -m flake8_dataloader` is the same program). "
                    "Linting is flake8's: flake8 --select=DL1,DL2,DL3,DL40,DL5,DL60,E9 src/",
    )
    top.add_argument("--version", action="version", version=f"flake8-dataloader {__version__}")
    commands = top.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    # `fix` never reaches this parser (main() hands it over first): listed for the help only.
    commands.add_parser("fix", help="apply the safe fixes in place (--diff to preview; `fix --help` for its options)")
    rule = commands.add_parser("rule", help="print a rule's page (rule DL402), or list every rule (rule --all)",
                               description="Print a rule's page: what it catches, why, the fix, its options.")
    which = rule.add_mutually_exclusive_group(required=True)
    which.add_argument("code", nargs="?", metavar="DLnnn", help="the rule's code, e.g. DL402")
    which.add_argument("--all", action="store_true", help="list every rule: code, name, on or off by default")
    docs = commands.add_parser("docs", help="regenerate docs/rules/*.md from the rule docstrings (maintainers)",
                               description="Regenerate the rule pages in a checkout of this project.")
    docs.add_argument("--root", type=Path, default=Path.cwd(), help="this project's checkout (default: .)")
    docs.add_argument("--output", type=Path, help="write the pages under this directory instead of ROOT/docs/rules")
    docs.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is out of date")
    return top


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["fix"]:  # its options pass through to flake8's parser
        from .autofix.command import main as fix

        return fix(argv[1:])
    args = parser().parse_args(argv)
    if args.command == "rule":
        return _rule(args)
    return _docs(args)


def _rule(args: argparse.Namespace) -> int:
    from .rules.pages import describe
    from .rules import RULES

    if args.all:
        width = max(len(rule.NAME) for rule in RULES)
        for rule in RULES:
            default = f"off  (--extend-select={rule.CODE})" if rule.DEFAULT_OFF else "on"
            print(f"{rule.CODE}  {rule.NAME:<{width}}  {default}")
        return 0
    code = args.code.upper()
    found = [rule for rule in RULES if rule.CODE == code]
    if not found:
        print(f"{PROG} rule: unknown code {args.code!r}; `{PROG} rule --all` lists the codes", file=sys.stderr)
        return 2
    page = describe(found[0]) + [
        "## Measured cost", "",
        f"`python -m runtime_checks --rule {code}` measures it on your machine (needs torch: the `runtime` "
        f"extra); the project's own measurements are on its page docs/rules/{code}.md.", "",
    ]
    sys.stdout.write("\n".join(page))
    return 0


def _docs(args: argparse.Namespace) -> int:
    from .rules.pages import generate, write

    if args.output is None and not is_checkout(args.root):
        print(f"{PROG} docs: {args.root.resolve()} is not a flake8-dataloader checkout; "
              "run it there, or give --output DIR", file=sys.stderr)
        return 2
    if args.check:
        stale = [p for p, text in generate(args.root, args.output).items() if not p.exists() or p.read_text() != text]
        for path in stale:
            print(f"out of date: {path} (run {PROG} docs)")
        return 1 if stale else 0
    for path in write(args.root, args.output):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
