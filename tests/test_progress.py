"""Long loops inside a stage report to the stage's bar: a total, so an ETA, for the join too."""

import io
import json
import threading

from tqdm import tqdm

from gpusimhash import _progress
from gpusimhash.dedup.pipeline import dedup_file


def test_without_a_bar_nothing_happens_and_bars_do_not_leak_between_threads():
    _progress.expect(5)
    _progress.advance()
    bar = tqdm(file=io.StringIO())
    seen = []
    with _progress.reporting(bar):
        _progress.expect(2)
        worker = threading.Thread(target=lambda: seen.append(_progress._BAR.get()))
        worker.start()
        worker.join()
        _progress.advance(2)
    assert (bar.total, bar.n, seen) == (2, 2, [None])
    bar.close()


def test_the_join_stage_has_a_total_and_completes_it(tmp_path):
    texts = [
        f"document {n} about topic {n % 50} with words {n % 7} and {n % 11}" for n in range(3000)
    ]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    bars = {}

    def progress(desc, unit, **kwargs):
        bars[desc] = tqdm(desc=desc, unit=unit, file=io.StringIO(), **kwargs)
        return bars[desc]

    dedup_file(path, tmp_path / "out", bits=128, max_distance=6, progress=progress)
    join = bars["join"]
    assert join.total >= 1
    assert join.n == join.total


def test_the_joins_worker_threads_follow_the_threads_option(monkeypatch):
    from gpusimhash._cpu._threads import threads

    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    everything = threads()
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert threads() == 1
    monkeypatch.setenv("NUMBA_NUM_THREADS", "999")
    assert threads() == everything
