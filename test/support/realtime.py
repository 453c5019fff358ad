"""Real-time tests: their processes at a known priority, and the machine's load on failure.

A verdict that depends on whether other processes left a CPU free passes by luck.  The
processes of a real-time test (``RosProcess(..., realtime=True)``) therefore run their
loops at a real-time policy where the user may (root, or CAP_SYS_NICE, or an RLIMIT_RTPRIO
limit), above everything at the ordinary policy: another test's compiler, other users'
builds.  Their own stalls (a garbage collection, a long callback) still show, which is
what these tests are for.  Where the policy is refused they run at the highest nice value
allowed, else at the test process's, and the failure report says which (conftest.py
adds it, with the machine's load, to every failed test marked ``realtime``).
"""
import os

# Low among real-time priorities: kernel threads (migration, watchdogs) stay above it.
REALTIME_PRIORITY = 10
# The test process, which watches them, below them and above the ordinary policy: the
# node's kernel warm-up (nice 19, in this session) then competes with no process of this
# session at the ordinary policy, and gets this session's share of the machine.
TEST_PROCESS_PRIORITY = 5
RAISED_NICE = -10
# "name (pid): priority" of each process raise_priority was asked for since the test began.
RAISED = []


def _raise(pid, priority):
    try:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(priority))
    except (AttributeError, OSError):
        try:
            os.setpriority(os.PRIO_PROCESS, pid, RAISED_NICE)
        except OSError:
            pass


def raise_own_priority():
    """This thread (and the threads it makes from now on: the test's rclpy clients) at
    :data:`TEST_PROCESS_PRIORITY`, as :func:`raise_priority`; a function that undoes it."""
    policy, nice = os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)
    parameter = os.sched_getparam(0)
    _raise(0, TEST_PROCESS_PRIORITY)

    def restore():
        os.sched_setscheduler(0, policy, parameter)
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    return restore


def raise_priority(pid, name):
    """Put process ``pid``'s main thread (and the threads it makes from now on) at
    :data:`REALTIME_PRIORITY` under SCHED_FIFO, else at nice :data:`RAISED_NICE`; the
    priority it got (also listed in :data:`RAISED` under ``name``).

    Called right after the process started, before it makes any thread.  Its children
    do not keep the policy where they ask for less (the kernel warm-up drops to nice 19).
    """
    _raise(pid, REALTIME_PRIORITY)
    priority = priority_of(pid)
    RAISED.append(f"{name} ({pid}): {priority}")
    return priority


def priority_of(pid=0):
    """The scheduling policy and priority of ``pid`` (0: this process), as text."""
    try:
        policy = os.sched_getscheduler(pid)
    except (AttributeError, OSError) as error:
        return f"unknown ({error})"
    if policy in (os.SCHED_FIFO, os.SCHED_RR):
        name = "SCHED_FIFO" if policy == os.SCHED_FIFO else "SCHED_RR"
        return f"{name} {os.sched_getparam(pid).sched_priority}"
    return f"SCHED_OTHER nice {os.getpriority(os.PRIO_PROCESS, pid)}"


def machine_load():
    """The load average and the kernel's CPU pressure (PSI) where it has it, as text."""
    one, five, fifteen = os.getloadavg()
    text = f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"
    try:
        with open("/proc/pressure/cpu") as pressure:
            text += "; CPU pressure: " + pressure.read().strip().replace("\n", "; ")
    except OSError:
        pass
    return text
