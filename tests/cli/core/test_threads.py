"""The scoring commands' OpenMP threads and wait policy: the pure decision, the load reading, and the console script
setting them before torch loads (a user's own settings win)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nobg_metrics.cli.core.threads import apply_thread_policy, other_load, thread_policy


@pytest.mark.parametrize(("cores", "busy", "threads"), [
    (2, 0.0, None), (2, 0.4, None), (2, 0.6, "1"), (2, 1.0, "1"), (2, 7.0, "1"),
    (16, 1.0, "15"), (16, 3.2, "13"), (16, 40.0, "1"), (1, 3.0, None),
])
def test_the_threads_leave_the_busy_cores_to_the_other_processes(cores, busy, threads):
    policy = thread_policy({}, cores, busy)
    assert policy.environ.get("OMP_NUM_THREADS") == threads
    assert policy.environ["OMP_WAIT_POLICY"] == "PASSIVE"


@pytest.mark.parametrize("user", [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "300000"}])
def test_a_users_wait_setting_is_kept(user):
    policy = thread_policy(user, 2, 1.0)
    assert policy.environ == {"OMP_NUM_THREADS": "1"} and "wait policy: the user's" in policy.reason


def test_a_users_thread_count_is_kept_and_default_turns_the_choice_off():
    assert thread_policy({"OMP_NUM_THREADS": "2"}, 2, 1.0).environ == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert thread_policy({"NOBG_METRICS_THREADS": "default"}, 2, 1.0).environ == {}
    environ = {"NOBG_METRICS_THREADS": "Default"}
    apply_thread_policy(environ)
    assert environ == {"NOBG_METRICS_THREADS": "Default"}


def test_the_load_is_the_smallest_runnable_count_of_other_processes():
    reads = iter(["0.5 0.5 0.5 4/300 123", "0.5 0.5 0.5 2/300 123", "0.5 0.5 0.5 3/300 123"])
    assert other_load(lambda: next(reads), gap_s=0) == 1.0  # 2 running, this process one of them
    assert other_load(lambda: "0.5 0.5 0.5 1/300 123", gap_s=0) == 0.0


def test_without_proc_loadavg_the_load_average_counts(monkeypatch):
    def missing() -> str:
        raise OSError("no /proc")

    monkeypatch.setattr(os, "getloadavg", lambda: (1.25, 1.0, 1.0))
    assert other_load(missing, gap_s=0) == 1.25


def test_apply_sets_only_what_the_user_left_unset():
    environ = {"OMP_NUM_THREADS": "3"}
    policy = apply_thread_policy(environ)
    assert environ == {"OMP_NUM_THREADS": "3", "OMP_WAIT_POLICY": "PASSIVE"}
    assert policy.environ == {"OMP_WAIT_POLICY": "PASSIVE"}


CHILD = ("import sys\nfrom nobg_metrics.cli.entry import main\nstatus = main(sys.argv[1:])\nimport os, torch\n"
         "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('OMP_NUM_THREADS'), torch.get_num_threads())\n")


def _child(tmp_path, **environ: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                                            "NOBG_METRICS_THREADS")}
    argv = ["instances", "--gt-json-file", str(tmp_path / "missing.json"), "--dt-json-file", str(tmp_path / "x.json")]
    result = subprocess.run([sys.executable, "-c", CHILD, *argv], env=env | environ, capture_output=True, text=True,
                            timeout=300)
    assert "no such file" in result.stderr, result.stderr
    return result.stdout.split()


def test_the_command_sets_the_policy_before_torch_loads(tmp_path):
    wait, threads, torch_threads = _child(tmp_path)
    assert wait == "PASSIVE"
    assert torch_threads == (threads if threads != "None" else torch_threads)  # torch took the chosen count


def test_the_command_keeps_the_users_settings(tmp_path):
    assert _child(tmp_path, OMP_WAIT_POLICY="ACTIVE", OMP_NUM_THREADS="1") == ["ACTIVE", "1", "1"]
    assert _child(tmp_path, NOBG_METRICS_THREADS="default")[:2] == ["None", "None"]


def test_a_process_of_the_command_beside_torch_takes_one_thread_away(monkeypatch):
    from nobg_metrics.cli.core import threads

    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads, "_CHOSEN", {})
    environ: dict[str, str] = {}
    threads.leave_a_core(environ)  # nothing chosen, nothing set: torch's default of 4 becomes 3
    assert environ == {"OMP_NUM_THREADS": "3"}
    monkeypatch.setattr(threads, "_CHOSEN", {"OMP_NUM_THREADS": "1"})  # one core left by the load already
    environ = {"OMP_NUM_THREADS": "1"}
    threads.leave_a_core(environ)
    assert environ == {"OMP_NUM_THREADS": "1"}  # never fewer than one
    monkeypatch.setattr(threads, "_CHOSEN", {})
    for users in ({"OMP_NUM_THREADS": "4"}, {"NOBG_METRICS_THREADS": "default"}):
        environ = dict(users)
        threads.leave_a_core(environ)
        assert environ == users
