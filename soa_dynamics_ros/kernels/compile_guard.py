"""Runs the C compiler so that it never outlives the process that asked for it.

Usage: ``python -I -S compile_guard.py COMPILER ARGS...`` with a pipe on stdin.
The compiler (gcc and the cc1/as/ld it starts) runs in its own process
group; when stdin reaches end of file, the requesting process has ended
(even by SIGKILL, which runs no clean-up) and the whole group is killed.
A process group, not a session: Linux's autogroup scheduling gives each session
an equal share of the CPUs, whatever its processes' nice values, so a compiler
in a session of its own took a core from the 1 kHz processes beside it although
the warm-up had lowered its priority (bench/results/compile_interference.md).
Standard library only, and started without ``site``: importing it costs a
noticeable share of the start-up.
"""
import os
import signal
import subprocess
import sys
import threading


def main():
    # Ctrl-C reaches the whole terminal group: the requester decides, through the pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # (os.setpgrp in the child: this process has no other thread yet)
    compiler = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, preexec_fn=os.setpgrp)

    def watch_parent():
        sys.stdin.buffer.read()          # returns at EOF: the parent closed or died
        if compiler.poll() is None:
            os.killpg(compiler.pid, signal.SIGKILL)
    threading.Thread(target=watch_parent, daemon=True).start()
    # os._exit: the watching thread is blocked reading stdin, which a normal
    # interpreter shutdown would wait on.
    os._exit(compiler.wait())


if __name__ == "__main__":
    main()
