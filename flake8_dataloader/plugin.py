"""The flake8 adapter: options in, (line, col, message, type) out. Nothing else.

flake8 imports this module in every process of every run, whatever `--select` says, so it
imports nothing heavy: the prefilter decides on the raw text and flake8's own ast, and only
a file that passes it loads the engine (LibCST, the facts, the rules).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Dict, FrozenSet, Iterator, List, Optional, Tuple, Type

from . import __version__, manifest
from .errors import STRICT_ENV
from .screen.decide import may_find, may_find_in_text
from .settings import (
    DEFAULT_SETTINGS, NOTEBOOK, START_METHODS, SWITCH, TEMPORARY_SUFFIX, Settings, SettingsError, cache_enabled_by_env,
)


LOG = logging.getLogger("flake8.dataloader")
_CACHE = f"{__package__}.cache"
Result = Tuple[int, int, str, str]  # (line, 0-based column, code, message)


def _out_of_the_collectors_reach() -> None:
    """What the process holds once LibCST and the rules are loaded (their modules, classes and functions,
    about 50,000 objects, alive until the process ends) leaves the collector's generations: each full
    collection for the rest of the run would walk them again (`gc.freeze`; FLAKE8_DATALOADER_GC_FREEZE=off
    to compare)."""
    if os.environ.get("FLAKE8_DATALOADER_GC_FREEZE", "on") != "off":
        import gc

        gc.freeze()


class DataLoaderChecker:
    name = "flake8-dataloader"
    version = __version__
    settings: Settings = DEFAULT_SETTINGS
    disable_noqa = False

    def __init__(self, tree, lines: List[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.add_option(
            "--dataloader-names",
            default="",
            parse_from_config=True,
            comma_separated_list=True,
            help="Extra qualified names of DataLoader classes (e.g. mypkg.data.Loader).",
        )
        option_manager.add_option(
            "--dataloader-start-method",
            default="auto",
            choices=START_METHODS,
            parse_from_config=True,
            help="Start method the code must be safe under (default: auto = every platform).",
        )
        option_manager.add_option(
            "--dataloader-follow-imports",
            default="on",
            choices=SWITCH,
            parse_from_config=True,
            help="Read the project's own modules a file imports (datasets, loader factories): on (default) or off.",
        )
        option_manager.add_option(
            "--dataloader-gate",
            default="on",
            choices=SWITCH,
            parse_from_config=True,
            help="Decide on flake8's ast which files can hold a finding before analysing them: on (default) or off.",
        )
        option_manager.add_option(
            "--dataloader-cache",
            default="on",
            choices=SWITCH,
            parse_from_config=True,
            help="Keep each file's findings in .flake8_dataloader_cache/ for the next run: on (default) or off.",
        )
        option_manager.add_option(
            "--dataloader-notebook",
            default="auto",
            choices=NOTEBOOK,
            parse_from_config=True,
            help="Lint files as Jupyter notebook cells: auto (default: nbQA's files), on (every file) or off.",
        )
        option_manager.extend_default_ignore(list(manifest.DEFAULT_OFF))

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        try:
            cls.settings = Settings.build(
                options.dataloader_names,
                options.dataloader_start_method,
                options.dataloader_follow_imports,
                selected_codes(options),
                getattr(options, "dataloader_gate", "on"),
                getattr(options, "dataloader_cache", "on") if cache_enabled_by_env() else "off",
                getattr(options, "dataloader_notebook", "auto"),
            )
        except SettingsError as exc:  # a value from a config file: the command line's line and exit status
            print(f"flake8: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))

    def run(self) -> Iterator[Tuple[int, int, str, Type["DataLoaderChecker"]]]:
        source = "".join(self.lines)
        if source.startswith("\ufeff"):
            source = source[1:]
        if self.settings.cache:
            results = self._cached(source)
        elif may_find(source, self.settings, self.tree, self.filename):
            results = self._analysed(source)[0]
        else:
            return
        if results and self.filename.endswith(TEMPORARY_SUFFIX):
            results = self._on_notebook_lines(source, results)
        for line, column, _code, message in results:
            yield line, column, message, type(self)

    def _analysed(self, source: str) -> Tuple[List[Tuple[int, int, str, str]], bool]:
        if "flake8_dataloader.engine" not in sys.modules:  # the first file that needs LibCST and the rules
            from . import engine  # noqa: F401

            _out_of_the_collectors_reach()
        from .engine import checked

        return checked(source, self.filename, self.settings, use_prefilter=False, tree=self.tree)

    def _cached(self, source: str) -> List[Tuple[int, int, str, str]]:
        """The findings from the cache, or decided, analysed and kept: the gate and the project index
        are part of what is kept (an entry of no findings), so a second run pays only the text scan."""
        # The walk of identifiers that spares a docstring-only 'loader' the cache's load (2.7 ms) costs
        # more than a lookup once the cache is loaded: 1.5 s over diffusers' 396 such files (its
        # `loaders` package), 382 of which pass it. A file that would fail it then gets an entry of no findings.
        walked = None if _CACHE in sys.modules else self.tree
        if not may_find_in_text(source, self.settings, self.filename, walked):
            return []
        from . import cache  # hashlib and the cache load on the first file naming a token, not at start-up
        from .project.reads import Reads

        keys = cache.keys(source, self.filename, self.settings)
        results = cache.lookup(keys)
        if results is not None:
            return results
        with Reads() as reads:
            on_disk = os.path.isfile(self.filename)  # the analysis follows imports only for a file on disk
            reads.probes[keys.path] = "file" if on_disk else "not file"  # nbQA's copy: its notebook
            results, complete = [], True
            if may_find(source, self.settings, self.tree, self.filename):
                results, complete = self._analysed(source)
        if complete:
            cache.store(keys, reads, results)
        return results

    def _on_notebook_lines(self, source: str, results: List[Result]) -> List[Result]:
        """nbQA's copy of a notebook: each finding moved to the line nbQA maps to the line the user wrote in
        the cell. A moved finding's `# noqa` is read here, on the line where the code is: flake8 reads it on
        the line the finding is moved to."""
        from .project import nbqa

        try:
            notebook = nbqa.notebook_of(self.filename, source)
            layout = None if notebook is None else nbqa.layout_lines(source, notebook)
        except Exception as exc:  # our bug: the findings stay on nbQA's lines
            if os.environ.get(STRICT_ENV):
                raise
            LOG.warning("flake8-dataloader: internal error on %s: %s: %s", self.filename, type(exc).__name__, exc)
            return results
        if layout is None:
            return results
        moved, spans = [], None
        for line, column, code, message in results:
            if 0 < line < len(layout) and layout[line] != line:
                spans = _noqa_spans(self.lines) if spans is None else spans  # one tokenize for all findings
                first, last = spans.get(line, (line, line))
                text = "".join(self.lines[first - 1:last])
                if _ignored_inline(text, line, column, code, message, self.disable_noqa):
                    continue
                line = layout[line]
            moved.append((line, column, code, message))
        return moved


def _ignored_inline(text: str, line: int, column: int, code: str, message: str, disable_noqa: bool) -> bool:
    """flake8's own `# noqa` decision for a finding on ``line``, read in ``text``: where flake8 would read
    it, the line or the lines of the multi-line string it is part of."""
    try:
        from flake8.violation import Violation

        return Violation(code, "", line, column + 1, message, text).is_inline_ignored(disable_noqa)
    except Exception:  # flake8's internals moved: the finding is kept
        return False


def _noqa_spans(lines: List[str]) -> Dict[int, Tuple[int, int]]:
    """As flake8's processor: for each line, the physical lines from one NL or NEWLINE token to the next
    that hold it (several only for a multi-line string). Lines the tokenizer does not reach are absent."""
    import tokenize

    spans: Dict[int, Tuple[int, int]] = {}
    first, last = len(lines) + 2, -1
    try:
        for token in tokenize.generate_tokens(iter(lines).__next__):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            first, last = min(first, token.start[0]), max(last, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                for number in range(first, last + 1):
                    spans[number] = (first, last)
                first, last = len(lines) + 2, -1
    except (tokenize.TokenError, SyntaxError, StopIteration):
        pass
    return spans


def selected_codes(options: argparse.Namespace) -> Optional[FrozenSet[str]]:
    """The plugin's codes flake8 will report, by its own --select/--ignore decision (per-file ignores and
    noqa only take more away); None (every default code) when the options are not flake8's."""
    try:
        from flake8.style_guide import Decision, DecisionEngine  # already imported by flake8 itself

        engine = DecisionEngine(options)
        return frozenset(code for code in manifest.CODES if engine.decision_for(code) is Decision.Selected)
    except (AttributeError, TypeError, ImportError):
        return None
