"""The command line's time and peak memory under glibc's mapping thresholds, in fresh processes.

`gpusimhash.cli.main` fixes glibc's mmap threshold (`gpusimhash._memory.return_freed_memory`),
so that arrays freed by one stage go back to the system. Each round runs ``gpusimhash dedup``
(``--no-report``) once per setting, in turns, each a fresh process, on:

- ``pypi-N``: the corpus's first N lines (``--sizes``) as JSONL, at the defaults;
- ``synth-N``: N synthetic documents (`gpusimhash.datasets.synth`, ``--synthetic``) at 64 bits
  radius 3 without verification, the run the fixed threshold was chosen on.

The settings: the threshold the command line sets (``MAPPED_FROM``), ``1 MiB`` and ``32 MiB``
fixed (its value set for the run), and glibc's adaptive threshold (no call). Records each run's
wall seconds and peak resident memory (``VmHWM``), and checks that every setting keeps the
same documents. Prints the best of the rounds and writes bench/results/cli_malloc_cpu.json.

    python bench/bench_cli_malloc.py [CORPUS] [--sizes 200000 800000] [--synthetic 1000000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, run_command_line, write_json
from bench_dedup_verify import write_synthetic

# the mapping threshold of each setting, in bytes: "default" the command line's own, None glibc's
# adaptive one
SETTINGS = {"command line": "default", "1 MiB": 1 << 20, "32 MiB": 32 << 20, "adaptive": None}
# makes the command line fix the threshold the setting gives, or leave glibc's adaptive one
SETUP = (
    "from gpusimhash import _memory\n"
    "import gpusimhash.cli as cli\n"
    "setting = {setting!r}\n"
    "if setting != 'default':\n"
    "    _memory.MAPPED_FROM = setting\n"
    "    cli.return_freed_memory = _memory.return_freed_memory if setting else (lambda: False)"
)


def run(setting: object, path: Path, out: Path, options: list[str]) -> dict:
    """Run ``dedup`` once in a fresh process; return its seconds, peak and kept digest."""
    arguments = ["dedup", str(path), "--out", str(out), "--overwrite", "--no-report", "-q"]
    seconds, peak, _ = run_command_line([*arguments, *options], SETUP.format(setting=setting))
    kept = hashlib.sha256((out / "kept.jsonl").read_bytes()).hexdigest()[:16]
    return {"seconds": round(seconds, 3), "peak_mib": round(peak / 1024, 1), "kept": kept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 800_000])
    parser.add_argument("--synthetic", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    lines = load_lines(args.corpus, max(args.sizes)) if args.sizes else []
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gpusimhash-cli-malloc-") as scratch:
        folder = Path(scratch)
        corpora: dict[str, tuple[Path, list[str]]] = {}
        for n in args.sizes:
            path = folder / f"pypi-{n}.jsonl"
            path.write_text("".join(json.dumps({"text": t}) + "\n" for t in lines[:n]))
            corpora[f"pypi-{n}"] = (path, [])
        for n in args.synthetic:
            path = folder / f"synth-{n}.jsonl"
            write_synthetic(path, n)
            corpora[f"synth-{n}"] = (path, ["--bits", "64", "--max-distance", "3", "--no-verify"])
        for round_ in range(args.rounds):
            for corpus, (path, options) in corpora.items():
                for name, setting in SETTINGS.items():
                    found = run(setting, path, folder / "out", options)
                    runs.append({"corpus": corpus, "setting": name, "round": round_, **found})
                    print(corpus, name, found, flush=True)
    table = []
    for corpus in dict.fromkeys(r["corpus"] for r in runs):
        base = min(
            r["seconds"] for r in runs if r["corpus"] == corpus and r["setting"] == "adaptive"
        )
        for name in SETTINGS:
            mine = [r for r in runs if r["corpus"] == corpus and r["setting"] == name]
            best = min(r["seconds"] for r in mine)
            table.append(
                {
                    "corpus": corpus,
                    "setting": name,
                    "best_s": best,
                    "range_s": f"{best:.2f}-{max(r['seconds'] for r in mine):.2f}",
                    "peak_mib": min(r["peak_mib"] for r in mine),
                    "time_vs_adaptive": round(best / base, 2),
                    "same_kept": len({r["kept"] for r in runs if r["corpus"] == corpus}) == 1,
                }
            )
    print_table(table, list(table[0]))
    path = write_json(
        "cli_malloc_cpu.json",
        {
            "corpus": str(args.corpus),
            "sizes": args.sizes,
            "synthetic": args.synthetic,
            "rounds": args.rounds,
            "settings": {k: v for k, v in SETTINGS.items()},
            "runs": runs,
            "table": table,
            "timing": "wall seconds of a fresh process each (imports included), best of the "
            "rounds; peak: VmHWM, the least of the rounds",
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
