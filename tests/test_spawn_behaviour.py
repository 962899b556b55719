"""Each DL3xx runnable fixture really fails under spawn, and its fixed twin runs.

Spawn is forced without editing the fixtures: a sitecustomize.py on
PYTHONPATH switches the start method in every process. Each spawned worker
imports torch again (seconds each), so the pairs run two at a time.
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from flake8_dataloader.engine import analyse
from runtime_checks.scenarios.start_method import SCRIPTS

from .conftest import FIXTURES

SPAWN = FIXTURES / "spawn"
PAIRS = {
    # code: (bad fixture, fixed fixture, force spawn, texts the bad run must print)
    "DL301": ("dl301_unguarded_training.py", "dl301_guarded_training.py", True,
              ["An attempt has been made to start a new process before the\n"
               "        current process has finished its bootstrapping phase.",
               "RuntimeError: DataLoader worker (pid(s)", ") exited unexpectedly"]),
    "DL302": ("dl302_lambda_collate.py", "dl302_module_collate.py", True,
              ["AttributeError: Can't pickle local object 'main.<locals>.<lambda>'"]
              if sys.version_info < (3, 13) else ["local object"]),
    # Defined under the guard: it pickles (by name) in the main process, each worker cannot find it.
    "DL302-guarded": ("dl302_class_under_main_guard.py", "dl302_class_at_module_level.py", True,
                      ["AttributeError: Can't get attribute 'Shifted' on <module '__mp_main__' from",
                       "RuntimeError: DataLoader worker (pid(s)", ") exited unexpectedly"]),
    # The script itself sets spawn: a forced start method would make its own call fail in the main process.
    "DL303": ("dl303_unguarded_set_start_method.py", "dl303_guarded_set_start_method.py", False,
              ["RuntimeError: context has already been set"]),
}


def run(path, force_spawn, tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if force_spawn:
        site = tmp_path / "site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(
            'import multiprocessing\nmultiprocessing.set_start_method("spawn", force=True)\n'
        )
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path, start_new_session=True)


@pytest.mark.spawn
@pytest.mark.parametrize("code", sorted(PAIRS))
def test_bad_fixture_fails_under_spawn_and_fixed_twin_runs(code, tmp_path):
    bad_name, fixed_name, force, texts = PAIRS[code]
    with ThreadPoolExecutor(2) as pool:
        bad_future = pool.submit(run, SPAWN / bad_name, force, tmp_path)
        fixed_future = pool.submit(run, SPAWN / fixed_name, force, tmp_path)
        bad, fixed = bad_future.result(), fixed_future.result()
    assert bad.returncode == 1, bad.stderr
    assert "DONE" not in bad.stdout
    for text in texts:
        assert text in bad.stderr
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.strip() == "DONE"


@pytest.mark.parametrize("code", sorted(SCRIPTS))
def test_runtime_check_scripts_are_what_the_linter_flags(code):
    """The scripts runtime_checks runs under spawn are the rule's bad pattern and its clean fix."""
    bad, fixed, _ = SCRIPTS[code]
    assert code in {c for _, _, c, _ in analyse(bad)}
    assert {c for _, _, c, _ in analyse(fixed)} == set()
