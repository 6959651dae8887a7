"""dedup reads plain text as UTF-8 bytes: the same results as the same texts read as str."""

import gzip
import json

import numpy as np
import pytest

from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io.lines import LineBatch
from gpusimhash.io.readers import InputError
from gpusimhash.io.records import text_lengths
from gpusimhash.io.sources import Reading, Source
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts

EXTRA = [
    "Ärger über Straßen",
    "ärger ÜBER straßen!",
    "😀 emoji 😀 line",
    "",
    "日本語 テキスト",
    "x",
]

# the run's times, which differ from run to run
TIMES = dict.fromkeys(
    [
        "seconds",
        "compile_seconds",
        "documents_per_second",
        "documents_per_second_excluding_compile",
    ],
    0,
)


def corpus():
    texts = [doc.text for doc in generate(CorpusSpec(n_docs=300, seed=3))]
    return texts + EXTRA + texts[:20]


@pytest.mark.parametrize(
    "options",
    [
        {"bits": 64, "max_distance": 4, "verify": False, "keep": "longest"},
        {"bits": 256, "keep": "longest", "cluster": "components"},
        {"bits": 128, "min_jaccard": 0.6},
        {"bits": 64, "featurizer": TextFeaturizer(analyzer="char", ngram=3)},
    ],
)
@pytest.mark.parametrize("compressed", [False, True])
def test_text_as_bytes_gives_the_str_paths_results(tmp_path, monkeypatch, options, compressed):
    texts = corpus()
    raw = "".join(t + "\n" for t in texts).encode()
    text_path = tmp_path / ("in.txt.gz" if compressed else "in.txt")
    text_path.write_bytes(gzip.compress(raw) if compressed else raw)
    json_path = tmp_path / "in.jsonl"
    json_path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    seen = []
    transform = TextFeaturizer.transform

    def recording(self, batch, **kwargs):
        seen.append(type(batch))
        return transform(self, batch, **kwargs)

    monkeypatch.setattr(TextFeaturizer, "transform", recording)
    from_bytes = dedup_file(text_path, tmp_path / "b", batch_size=64, **options)
    assert set(seen) == {Utf8Texts}  # no list of str on the way
    seen.clear()
    from_str = dedup_file(json_path, tmp_path / "s", batch_size=64, **options)
    assert set(seen) == {list}
    np.testing.assert_array_equal(from_bytes.codes, from_str.codes)
    np.testing.assert_array_equal(from_bytes.kept, from_str.kept)
    np.testing.assert_array_equal(from_bytes.cluster, from_str.cluster)
    assert from_bytes.summary["results"] | TIMES == (from_str.summary["results"] | TIMES)
    assert from_bytes.kept.sum() < len(texts)  # the corpus has near-duplicates
    kept = [json.loads(line)["text"] for line in (tmp_path / "b" / "kept.jsonl").open()]
    assert kept == [t for t, k in zip(texts, from_str.kept, strict=True) if k]


def test_first_pass_reads_line_batches_and_lengths_in_code_points(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\nÄÖü\n😀😀\n\n")
    source = Source.of(path, Reading(batch_size=3))
    batches = list(source.fingerprint_batches(records=False))
    assert [type(b) for b in batches] == [LineBatch, LineBatch]
    assert [b.rows.tolist() for b in batches] == [[0, 1, 2], [3]]
    assert np.concatenate([text_lengths(b) for b in batches]).tolist() == [1, 3, 2, 0]


def test_invalid_utf8_in_plain_text_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nnot \xff fine\n")
    with pytest.raises(InputError, match=r"bad\.txt, line 2: not valid UTF-8"):
        dedup_file(path, tmp_path / "o")
