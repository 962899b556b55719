"""The pip command that adds an extra (runtime, plot) to flake8-dataloader as this copy was installed.

From an index, `pip install 'flake8-dataloader[runtime]'` works; from a checkout or a git URL it
cannot (the package is on no index there), so the command follows pip's record of the install
(direct_url.json, PEP 610), and a copy pip never installed gets both forms.
"""

from __future__ import annotations

import json
import os
import shlex
from typing import Dict, Optional
from urllib.parse import unquote, urlparse

DISTRIBUTION = "flake8-dataloader"


def recorded_install() -> Optional[Dict]:
    """pip's direct_url.json for this distribution: {} when it came from an index, None when pip never
    installed it (a source tree's own egg-info, found first when run from the tree, is no install)."""
    from importlib import metadata

    for found in metadata.distributions(name=DISTRIBUTION):
        if not str(getattr(found, "_path", "")).endswith(".dist-info"):
            continue
        text = found.read_text("direct_url.json")
        try:
            return json.loads(text) if text else {}
        except ValueError:
            return {}
    return None


def checkout() -> Optional[str]:
    """The source tree this package is imported from, when it is one (a pyproject.toml beside it)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return root if os.path.isfile(os.path.join(root, "pyproject.toml")) else None


def command_for(direct_url: Optional[Dict], source: Optional[str], extra: str) -> str:
    """What to run for ``extra``, given pip's record (see recorded_install) and the source tree."""
    named = f"{DISTRIBUTION}[{extra}]"
    if direct_url is None:  # imported from a tree pip never installed
        local = f"pip install -e {shlex.quote(f'{source}[{extra}]')}" if source else None
        remote = f"pip install {shlex.quote(f'{named} @ git+<repository URL>')}"
        return f"{local} (or {remote})" if local else remote
    url = direct_url.get("url", "")
    if "vcs_info" in direct_url:
        vcs = direct_url["vcs_info"]
        revision = vcs.get("requested_revision") or vcs.get("commit_id")
        at = f"@{revision}" if revision else ""
        requirement = f"{named} @ {vcs.get('vcs', 'git')}+{url}{at}"
        return f"pip install {shlex.quote(requirement)}"
    if "dir_info" in direct_url and url.startswith("file:"):
        path = unquote(urlparse(url).path)
        editable = "-e " if direct_url["dir_info"].get("editable") else ""
        return f"pip install {editable}{shlex.quote(f'{path}[{extra}]')}"
    if url:  # an archive or wheel named by URL
        return f"pip install {shlex.quote(f'{named} @ {url}')}"
    return f"pip install {shlex.quote(named)}"


def command(extra: str) -> str:
    return command_for(recorded_install(), checkout(), extra)
