"""Several processes, one experiment: canaries of one name on one SQLite file or one Redis server count together
and follow the same decision."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from support.canary_arms import keys_for
from support.canary_worker import Broken, SharedStore, candidate, control

from guardrail.canary import Canary, Tally

ROOT = Path(__file__).resolve().parents[2]
SHARE = 0.5


def workers(store: SharedStore, name: str, pairs: int, min_samples: int, count: int = 1) -> list[dict[str, int]]:
    """Run ``count`` worker processes at once on ``store``; what each answered."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    arguments = [store.kind, store.location, store.prefix, name, str(pairs), str(min_samples)]
    running = [subprocess.Popen([sys.executable, "-m", "support.canary_worker", *arguments], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(count)]
    outputs = []
    for process in running:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        outputs.append(json.loads(out))
    return outputs


def test_two_processes_count_into_one_tally(shared: SharedStore) -> None:
    answered = workers(shared, "shared", pairs=30, min_samples=1000, count=2)
    # each process: 30 control calls, 30 candidate calls of which the 15 even rounds failed
    assert answered == [{"control": 30, "candidate": 15, "failed": 15}] * 2
    status = Canary(control, candidate, store=shared.open(), name="shared", min_samples=1000).status()
    assert (status.control, status.candidate) == (Tally(60, 0), Tally(60, 30))
    assert status.candidate_failures == {"broken": 30} and status.control_failures == {}


def test_a_rollback_made_in_one_process_routes_the_others_to_control(shared: SharedStore) -> None:
    (first,) = workers(shared, "rollback", pairs=20, min_samples=10)
    # 10 control calls, then the candidate's 10th outcome (5 of 10 failed vs 0 of 10) rolls back; the last 10
    # candidate keys reach control
    assert first == {"control": 30, "candidate": 5, "failed": 5}
    elsewhere = Canary(control, candidate, share=SHARE, store=shared.open(), name="rollback", min_samples=10)
    assert elsewhere.state == "rolled_back"
    assert elsewhere.routed(next(keys_for("rollback", SHARE, True)))(1) == "control 1"
    (second,) = workers(shared, "rollback", pairs=5, min_samples=10)
    assert second == {"control": 10, "candidate": 0, "failed": 0}
    assert elsewhere.status().candidate == Tally(10, 5)


def test_two_instances_in_one_process_share_the_counts_and_a_manual_decision(shared: SharedStore) -> None:
    one = Canary(control, candidate, share=SHARE, store=shared.open(), name="pair", min_samples=1000)
    two = Canary(control, candidate, share=SHARE, store=shared.open(), name="pair", min_samples=1000)
    candidate_key = next(keys_for("pair", SHARE, True))
    assert one.routed(candidate_key)(1) == "candidate 1"
    with contextlib.suppress(Broken):
        two.routed(candidate_key)(2)
    assert one.status().candidate == two.status().candidate == Tally(2, 1)
    assert two.rollback("dashboards show complaints") is True
    assert one.rollback() is False  # the first decision holds
    assert one.routed(candidate_key)(3) == "control 3"
    assert one.status().decision is not None and one.status().decision["reason"] == "dashboards show complaints"
    one.reset()
    assert two.state == "live" and two.status().candidate == Tally(0, 0)
    assert two.promote() is True
    assert one.routed(next(keys_for("pair", SHARE, False)))(5) == "candidate 5"
