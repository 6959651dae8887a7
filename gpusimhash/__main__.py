"""Run the command line: ``python -m gpusimhash`` and the ``gpusimhash`` script."""

import signal
import sys


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
    sys.exit(code)


if __name__ == "__main__":
    run()
