"""Run the command line: ``python -m gpusimhash`` and the ``gpusimhash`` script."""

import atexit
import contextlib
import os
import signal
import sys
import threading
from typing import NoReturn


def run() -> None:
    """Run the ``gpusimhash`` command and exit with its code.

    A Ctrl-C while the command line module is still importing also ends as exit 130 with one
    line; once the command has finished, a late Ctrl-C cannot change its exit code.
    """
    try:
        from gpusimhash import _interrupts

        _interrupts.install()
        from gpusimhash.cli import interrupted, main

        try:
            code = main()
        except KeyboardInterrupt:  # between main's own handlers
            code = interrupted()
    except KeyboardInterrupt:
        print("gpusimhash: interrupted", file=sys.stderr)
        code = 130
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_now(code)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` without tearing the interpreter down.

    The command has written and closed its outputs by now. The exit handlers still run (the
    logging shutdown, the removal of a private Numba cache folder) and the standard streams are
    flushed, but the modules of NumPy, Numba, LLVM and Matplotlib are not torn down one object
    at a time: that took about 0.4 s after a 2-second run (``interpreter_start_and_exit_s`` in
    ``bench/results/startup_cpu.json``). While another thread that the interpreter would wait
    for is still running, it exits as usual instead.

    Parameters
    ----------
    code : int
        The exit code.
    """
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
