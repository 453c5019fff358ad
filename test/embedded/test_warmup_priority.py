"""The node's background warm-up compiles at the lowest priority of the node's own session.

Linux's autogroup scheduling shares the CPUs equally between sessions, whatever the nice
values inside them: a compiler in a session of its own takes a full share from the 1 kHz
processes beside it (issue 48: the simulated arm's loop waited 102.6 ms for a CPU while
a robot's kernels compiled).  The compiler here is a stand-in (``CC``) that writes down
where the kernel put it, then fails the build.
"""
import os
import pathlib
import stat
import sys

import pytest

from support.robots import shipped_urdf
from support.waiting import wait_for
from soa_dynamics_ros.embedded.warmup import BackgroundWarmup

RECORDING_COMPILER = """#!{python}
import os, sys
if sys.argv[1] == "--version":
    sys.exit(print("recording-cc 1"))
if sys.argv[1].startswith("-print-file-name="):
    sys.exit(print("libmvec.so"))
with open({record!r}, "a") as record:
    print(os.getsid(0), os.getpgrp(), os.getpriority(os.PRIO_PROCESS, 0),
          os.sched_getscheduler(0), file=record)
sys.exit(1)
"""


def _compilers_of_a_warmup(tmp_path, monkeypatch):
    """(session, process group, nice, policy) of each compiler a warm-up started."""
    record = tmp_path / "compilers.txt"
    compiler = tmp_path / "recording-cc"
    compiler.write_text(RECORDING_COMPILER.format(python=sys.executable, record=str(record)))
    compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CC", str(compiler))
    monkeypatch.setenv("SOA_DYNAMICS_CACHE", str(tmp_path / "cache"))
    return record


def _finish(warmup, record):
    wait_for(lambda: warmup.poll() is not None, 300, what="the warm-up to end")
    assert record.exists(), f"no compiler ran: {warmup.poll()}"
    return [tuple(int(field) for field in line.split()) for line in record.read_text().splitlines()]


def test_the_compilers_share_the_session_and_run_at_nice_19(tmp_path, monkeypatch):
    record = _compilers_of_a_warmup(tmp_path, monkeypatch)
    compilers = _finish(BackgroundWarmup(pathlib.Path(shipped_urdf("ur5.urdf")).read_text()), record)
    for session, group, nice, policy in compilers:
        assert session == os.getsid(0), "a compiler in a session (an autogroup) of its own"
        assert group != os.getpgrp(), "no process group of its own to be killed as"
        assert (nice, policy) == (19, os.SCHED_OTHER)


def test_a_real_time_requester_passes_no_real_time_priority_to_its_compilers(tmp_path,
                                                                             monkeypatch):
    record = _compilers_of_a_warmup(tmp_path, monkeypatch)
    description = pathlib.Path(shipped_urdf("ur5.urdf")).read_text()
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        pytest.skip("this user may not use SCHED_FIFO")
    try:
        warmup = BackgroundWarmup(description)
        # Not even the child's interpreter start runs at the requester's real-time policy,
        # nor does the requester lose it.
        assert os.sched_getscheduler(warmup.process.pid) == os.SCHED_OTHER
        assert os.sched_getscheduler(0) == os.SCHED_FIFO
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    for _, _, nice, policy in _finish(warmup, record):
        assert (nice, policy) == (19, os.SCHED_OTHER)
