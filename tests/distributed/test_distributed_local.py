"""Local worker processes get the thread counts asked for, set before they start."""

import argparse
import os

import pytest

distributed = pytest.importorskip("distributed")

from gpusimhash.cli.distributed import _client
from gpusimhash.distributed import local_cluster

pytestmark = pytest.mark.slow  # Dask workers start in every test


def _threads():
    import faiss
    import numba

    return numba.config.NUMBA_NUM_THREADS, numba.get_num_threads(), faiss.omp_get_max_threads()


def test_every_worker_and_a_respawned_one_get_the_threads(monkeypatch):
    ours = {name: os.environ.get(name) for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")}
    for name in ours:  # restored at teardown: a respawn sets them here again (Dask's nanny)
        monkeypatch.setenv(name, "2")
    with (
        local_cluster(2, threads=1, dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):
        # this process keeps its own values
        assert [os.environ[name] for name in ours] == ["2", "2"]
        assert list(client.run(_threads).values()) == [(1, 1, 1)] * 2
        client.restart()  # the nannies spawn their workers again
        assert list(client.run(_threads).values()) == [(1, 1, 1)] * 2
        workers = client.scheduler_info()["workers"].values()
        assert [w["nthreads"] for w in workers] == [1, 1]


def test_the_workers_get_glibcs_ceilings_not_dasks_trim_threshold(monkeypatch):
    # a nanny of another cluster in this process leaves Dask's value in its environment
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    names = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")

    def thresholds():
        return tuple(os.environ.get(name) for name in names)

    with (
        local_cluster(2, threads=1, dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):
        assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"  # this process keeps its own
        ceilings = (str(32 << 20), str(64 << 20))
        assert list(client.run(thresholds).values()) == [ceilings] * 2
        client.restart()  # the nannies spawn their workers again
        assert list(client.run(thresholds).values()) == [ceilings] * 2


def test_clusters_made_one_after_another_get_their_own_counts():
    # the bench's sequence: the first cluster's counts must not stay in this process for the next
    for threads in (1, 2, 1):
        with (
            local_cluster(1, threads, dashboard_address=":0") as cluster,
            distributed.Client(cluster) as client,
        ):
            assert list(client.run(_threads).values()) == [(threads, threads, threads)]


def test_the_command_shares_the_cores_among_its_workers():
    # what `gpusimhash dedup --workers 2` starts: cores // 2 threads each (1 on two cores,
    # where Numba alone would take 2)
    expected = max(1, (os.cpu_count() or 1) // 2)
    with _client(argparse.Namespace(scheduler=None, workers=2)) as client:
        assert list(client.run(_threads).values()) == [(expected, expected, expected)] * 2


@pytest.mark.parametrize(("n_workers", "threads", "name"), [(0, 1, "n_workers"), (1, 0, "threads")])
def test_bad_counts_are_refused(n_workers, threads, name):
    with pytest.raises(ValueError, match=f"local_cluster: {name} must be >= 1, got 0"):
        local_cluster(n_workers, threads)
