"""Ctrl-C on `manage.py perturb_pairs` cancels its job before the next original, as the project page's Cancel does.

Before, the command died with a KeyboardInterrupt traceback and left its job "running" for good: the project page
showed it running with nobody on it, a new perturbation was refused while it was ("already running"), and only a
worker's restart went on with it. Now the job is cancelled ("Cancelled by command (Ctrl-C in manage.py
perturb_pairs) at ...", the words the `judge` command's Ctrl-C uses), the originals perturbed stay with their items,
the command prints one line on stderr and exits with 130, and a new start goes on with the rest.

The command runs in a subprocess (its main thread gets the real SIGINT) with the tiny test models, each original
held a moment before it is perturbed so that the Ctrl-C comes mid-job; its database is a SQLite file in a temporary
data folder, read back with sqlite3.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.judging.test_judge_ctrl_c import ROOT, finished, manage, rows, wait_for
from tests.pairs.factories_perturbation import build_tiny_models

HOLD = 1.0  # seconds each original waits before it is perturbed

SLOW_PERTURB = f"""
import sys, time, django
django.setup()
from annotate.perturbation import pipeline
real = pipeline.perturb_text
def held(*args, **kwargs):
    time.sleep({HOLD})
    return real(*args, **kwargs)
pipeline.perturb_text = held
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", *sys.argv[1:]])
"""


def setup(masked: Path, causal: Path) -> str:
    return (
        "from annotate.models import PairConfig, PairOriginal, Project; "
        "from tests.pairs.test_perturbation import TEXTS; "
        "project = Project.objects.create(name='Pairs', slug='pairs', kind=Project.Kind.PAIRS); "
        f"PairConfig.objects.create(project=project, masked_lm={str(masked)!r}, causal_lm={str(causal)!r}, "
        "candidates=8); "
        "[PairOriginal.objects.create(project=project, external_id=f'o{i}', text=TEXTS[i % 2]) for i in range(6)]"
    )


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("perturbation-models"))


def slow_perturb(data_dir: Path, *args: str) -> subprocess.Popen[str]:
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "PAIRS_MASKED_LM",
                                                                             "PAIRS_CAUSAL_LM")}
    env |= {"FAITHLAB_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-c", SLOW_PERTURB, "perturb_pairs", *args], cwd=ROOT,  # noqa: S603
                            env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def job_row(data_dir: Path) -> Any:
    return rows(data_dir, "select id, status, error, options, done, total from annotate_job order by id desc limit 1")


def test_ctrl_c_cancels_the_perturbation_job_keeps_what_it_perturbed_and_exits_130(
    tmp_path: Path, model_dirs: tuple[Path, Path]
) -> None:
    for args in (("migrate", "-v0"), ("shell", "-c", setup(*model_dirs))):
        code, out, err = finished(manage(tmp_path, *args))
        assert code == 0, err
    command = slow_perturb(tmp_path, "--project", "pairs", "--seed", "3")
    wait_for(lambda: (job := job_row(tmp_path)) and job[0][4] > 0)  # the first original is perturbed
    command.send_signal(signal.SIGINT)
    code, out, err = finished(command)
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    [(job_id, status, error, options, done, total)] = job_row(tmp_path)
    assert err.strip().splitlines()[-1] == (
        f"Job {job_id} cancelled (Ctrl-C): {done} of {total} original texts done, {total - done} not. The perturbed "
        "texts and their items stay; `manage.py perturb_pairs --project pairs` goes on with the rest.")
    # Cancelled as the page's Cancel words it, in the command's name, not left running for a worker to resume.
    assert status == "failed" and error.startswith("Cancelled by command (Ctrl-C in manage.py perturb_pairs) at ")
    assert '"cancelled_by": "command (Ctrl-C in manage.py perturb_pairs)"' in options
    assert 0 < done < total == 6
    perturbed = rows(tmp_path, "select count(*) from annotate_pairoriginal where perturbed_at is not null")[0][0]
    assert perturbed == done
    # A new start is not refused by the dead job: it goes on with the originals left.
    code, out, err = finished(manage(tmp_path, "perturb_pairs", "--project", "pairs", "--seed", "3"))
    assert code == 0, err
    assert f"Perturbing {total - done} original text(s) of pairs" in out
    assert rows(tmp_path, "select status from annotate_job order by id") == [("failed",), ("done",)]
