"""DL301-DL303 under spawn: each bad script next to its fixed twin, run as real programs."""

from __future__ import annotations

import os
import re
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Tuple

from ..measure import run_script
from .base import Options, Scenario
from .common import progress, verdict

HEADER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

DATA = TensorDataset(torch.arange(8.0))
"""

FORCE_SPAWN = 'import multiprocessing\nmultiprocessing.set_start_method("spawn", force=True)\n'

SCRIPTS: Dict[str, Tuple[str, str, bool]] = {
    # name: (bad, fixed, force spawn through sitecustomize)
    "DL301": (
        HEADER + "loader = DataLoader(DATA, batch_size=4, num_workers=1)\n"
        "for batch in loader:\n    pass\nprint('DONE')\n",
        HEADER + "if __name__ == '__main__':\n    loader = DataLoader(DATA, batch_size=4, num_workers=1)\n"
        "    for batch in loader:\n        pass\n    print('DONE')\n",
        True,
    ),
    "DL302": (
        HEADER + "def main():\n    loader = DataLoader(DATA, num_workers=1, collate_fn=lambda b: b)\n"
        "    for batch in loader:\n        pass\n    print('DONE')\n\n\n"
        "if __name__ == '__main__':\n    main()\n",
        HEADER + "def keep(b):\n    return b\n\n\n"
        "def main():\n    loader = DataLoader(DATA, num_workers=1, collate_fn=keep)\n"
        "    for batch in loader:\n        pass\n    print('DONE')\n\n\nif __name__ == '__main__':\n    main()\n",
        True,
    ),
    "DL303": (
        "import torch.multiprocessing as mp\n" + HEADER + "mp.set_start_method('spawn')\n\n"
        "if __name__ == '__main__':\n    for batch in DataLoader(DATA, num_workers=1):\n        pass\n"
        "    print('DONE')\n",
        "import torch.multiprocessing as mp\n" + HEADER + "\nif __name__ == '__main__':\n"
        "    mp.set_start_method('spawn')\n    for batch in DataLoader(DATA, num_workers=1):\n        pass\n"
        "    print('DONE')\n",
        False,
    ),
}

EXPECTED = {
    "DL301": ("bootstrapping phase", "exited unexpectedly"),
    "DL302": ("local object",),
    "DL303": ("context has already been set",),
}


def run_pair(code: str, timeout: float) -> Dict:
    bad, fixed, force_spawn = SCRIPTS[code]
    with tempfile.TemporaryDirectory(prefix="runtime_checks_") as tmp:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if force_spawn:
            site = os.path.join(tmp, "site")
            os.mkdir(site)
            with open(os.path.join(site, "sitecustomize.py"), "w") as handle:
                handle.write(FORCE_SPAWN)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
        paths = {}
        for name, text in (("bad", bad), ("fixed", fixed)):
            paths[name] = os.path.join(tmp, f"{code.lower()}_{name}.py")
            with open(paths[name], "w") as handle:
                handle.write(textwrap.dedent(text))
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {name: pool.submit(run_script, path, timeout, env, tmp) for name, path in paths.items()}
            return {name: future.result() for name, future in futures.items()}


def _errors(stderr: str):
    return [line.strip() for line in stderr.splitlines() if re.match(r"^\w+(\.\w+)*(Error|Exception):", line.strip())]


def _scenario(code: str, name: str):
    def run(opts: Options) -> dict:
        limit = 60 if opts.quick else 120
        progress(opts, name, f"running the bad and the fixed script under spawn (at most {limit} s)")
        result = run_pair(code, limit)
        bad, fixed = result["bad"], result["fixed"]
        found = [text for text in EXPECTED[code] if text in bad["stderr"]]
        fixed_ok = fixed["rc"] == 0 and "DONE" in fixed["stdout"]
        errors = _errors(bad["stderr"])
        return verdict(
            bad["rc"] != 0 and len(found) == len(EXPECTED[code]) and fixed_ok,
            f"spawn: bad exits {bad['rc']} ({errors[-1] if errors else 'no error line'}); "
            f"fixed exits {fixed['rc']} in {fixed['seconds']:.1f} s",
            {
                "bad_rc": bad["rc"],
                "bad_errors": errors,
                "bad_timed_out": bad["timed_out"],
                "fixed_rc": fixed["rc"],
                "fixed_seconds": round(fixed["seconds"], 3),
            },
        )

    return run


SCENARIOS = [
    Scenario("unguarded-entry-point-spawn", ("DL301",), _scenario("DL301", "unguarded-entry-point-spawn"), 150),
    Scenario("unpicklable-payload-spawn", ("DL302",), _scenario("DL302", "unpicklable-payload-spawn"), 150),
    Scenario("unguarded-start-method-spawn", ("DL303",), _scenario("DL303", "unguarded-start-method-spawn"), 150),
]
