"""Run the command line in this process: what the CLI tests share."""

from gpusimhash.cli import main


def in_process(args, capsys):
    """Run ``gpusimhash ARGS``; return its exit code, stdout and stderr."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as stop:
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err
