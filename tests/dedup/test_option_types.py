"""DedupOptions refuses options of the wrong kind or range up front, naming the option."""

from pathlib import Path

import numpy as np
import pytest

from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.pipeline import dedup_file

SWITCHES = [
    "verify",
    "empty_as_duplicates",
    "force",
    "report",
    "skip_invalid",
    "annotate",
    "add_kept",
    "pairs",
]


@pytest.mark.parametrize("name", SWITCHES)
def test_a_switch_must_be_a_bool(name):
    with pytest.raises(TypeError, match=rf"^{name} must be a bool, got str 'no'$"):
        DedupOptions(**{name: "no"})


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"batch_size": "10"}, TypeError, r"^batch_size must be an integer, got str '10'$"),
        ({"batch_size": 2.5}, TypeError, r"^batch_size must be an integer, got float 2\.5$"),
        ({"batch_size": True}, TypeError, r"^batch_size must be an integer, got bool True$"),
        ({"batch_size": 0}, ValueError, r"^batch_size must be >= 1, got 0$"),
        ({"max_candidate_pairs": -1}, ValueError, r"^max_candidate_pairs must be >= 1, got -1$"),
        ({"max_candidate_pairs": 0}, ValueError, r"^max_candidate_pairs must be >= 1, got 0$"),
        (
            {"max_candidate_pairs": None},
            TypeError,
            r"^max_candidate_pairs must be an integer, got NoneType None$",
        ),
        ({"max_candidate_pairs": 1e9}, TypeError, "^max_candidate_pairs must be an integer"),
        ({"text_field": None}, TypeError, r"^text_field must be a str, got NoneType None$"),
        ({"id_field": 3}, TypeError, r"^id_field must be a str, got int 3$"),
        ({"truth_field": ["a"]}, TypeError, r"^truth_field must be a str, got list \['a'\]$"),
        (
            {"keep": "score", "score_field": 1},
            TypeError,
            r"^score_field must be a str, got int 1$",
        ),
        ({"format": 3}, TypeError, r"^format must be a str, got int 3$"),
        (
            {"format": "xml"},
            ValueError,
            r"^format must be one of jsonl, parquet, csv, tsv, text, got 'xml'$",
        ),
        ({"recall": "high"}, TypeError, r"^recall must be a number, got str$"),
        ({"recall": 1.5}, ValueError, r"^recall must be in \(0, 1\), got 1\.5$"),
        ({"recall": 0}, ValueError, r"^recall must be in \(0, 1\), got 0$"),
        (
            {"verify": False, "candidate_recall": "all"},
            TypeError,
            r"^candidate_recall must be a real number, got str 'all'$",
        ),
        (
            {"max_distance": 3, "candidate_recall": 0.0},
            ValueError,
            r"^candidate_recall must be in \(0, 1\], got 0$",
        ),
        (
            {"device": "tpu"},
            ValueError,
            r"^device must be one of \('auto', 'cpu', 'gpu'\), got 'tpu'$",
        ),
        (
            {"against": 3},
            TypeError,
            r"^against must be a path \(str or Path\), got int 3$",
        ),
    ],
)
def test_an_option_of_the_wrong_kind_or_range_is_named(options, error, message):
    with pytest.raises(error, match=message):
        DedupOptions(**options)


def test_valid_options_of_other_kinds_are_kept_as_given():
    options = DedupOptions(
        verify=np.True_,
        batch_size=np.int64(5),
        max_candidate_pairs=1,
        recall=0.5,
        format="csv",
        device="cpu",
        against=Path("index"),
        add_kept=True,
        id_field="key",
        truth_field="group",
        keep="score",
        score_field="score",
    )
    assert options.batch_size == 5
    assert options.reading.batch_size == 5
    assert options.max_candidate_pairs == 1
    assert options.against == Path("index")


def test_dedup_file_refuses_a_bad_option_before_reading(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "a b c"}\n')
    with pytest.raises(TypeError, match=r"^batch_size must be an integer, got str '10'$"):
        dedup_file(path, tmp_path / "out", batch_size="10")
    with pytest.raises(TypeError, match=r"^text_field must be a str, got NoneType None$"):
        dedup_file(path, tmp_path / "out", text_field=None)
    with pytest.raises(TypeError, match=r"^empty_as_duplicates must be a bool, got str 'no'$"):
        dedup_file(path, tmp_path / "out", empty_as_duplicates="no")
    assert not (tmp_path / "out").exists()


def test_distributed_dedup_refuses_a_bad_option(tmp_path):
    pytest.importorskip("distributed")
    from gpusimhash.distributed import dedup

    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "a b c"}\n')
    with pytest.raises(ValueError, match=r"^max_candidate_pairs must be >= 1, got -1$"):
        dedup([path], tmp_path / "out", max_candidate_pairs=-1)
    with pytest.raises(TypeError, match=r"^verify must be a bool, got str 'no'$"):
        dedup([path], tmp_path / "out", verify="no")
