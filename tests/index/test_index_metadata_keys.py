"""A saved index with settings this release does not know is refused, naming key and writer."""

import json

import pytest

from gpusimhash import SimHashIndex, TextFeaturizer, __version__
from gpusimhash.cli import main
from gpusimhash.io import bundle
from gpusimhash.io.bundle import BundleError

TEXTS = ["one fish two fish", "red fish blue fish", "a quiet street at dawn"]


def saved(tmp_path, **kwargs):
    folder = tmp_path / "idx"
    index = SimHashIndex(bits=64, **kwargs)
    index.add(TEXTS)
    index.save(folder)
    return folder


def rewrite(folder, change):
    """Change a manifest as a later release might write it, its checksum recomputed."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    body = {key: manifest[key] for key in ("format", "format_version", "files", "metadata")}
    manifest["manifest_sha256"] = bundle._self_checksum(body)
    path.write_text(json.dumps(manifest))


def later(manifest, **metadata):
    manifest["metadata"].update(metadata)
    manifest["written_by"] = "gpusimhash 9.0.0"


def test_the_manifest_says_which_release_wrote_it(tmp_path):
    folder = saved(tmp_path)
    assert json.loads((folder / "manifest.json").read_text())["written_by"] == (
        f"gpusimhash {__version__}"
    )
    assert bundle.writer_of(folder) == f"gpusimhash {__version__}"


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (lambda m: later(m, stemmer="porter"), "stemmer"),
        (lambda m: m["metadata"]["featurizer"].update(stopwords=["the"]), "featurizer.stopwords"),
    ],
)
@pytest.mark.parametrize("reader", [SimHashIndex.load, SimHashIndex.load_settings])
def test_an_unknown_key_is_refused(tmp_path, change, key, reader):
    folder = saved(tmp_path)
    rewrite(folder, change)
    writer = "gpusimhash 9.0.0" if key == "stemmer" else f"gpusimhash {__version__}"
    with pytest.raises(BundleError) as error:
        reader(folder)
    message = str(error.value)
    assert f"metadata key {key!r} is unknown to this release (gpusimhash {__version__})" in message
    assert f"written by {writer}" in message


def test_an_unknown_key_of_a_fitted_featurizer_is_refused(tmp_path):
    featurizer = TextFeaturizer(weighting="tfidf").fit(TEXTS)
    folder = saved(tmp_path, featurizer=featurizer)
    assert SimHashIndex.load(folder).featurizer.is_fitted  # every key of a fitted one is known
    rewrite(folder, lambda m: m["metadata"]["featurizer"]["document_frequencies"].update(smooth=1))
    with pytest.raises(BundleError, match="'featurizer.document_frequencies.smooth' is unknown"):
        SimHashIndex.load(folder)


def test_keys_listed_as_informative_are_ignored(tmp_path):
    folder = saved(tmp_path)
    rewrite(folder, lambda m: later(m, note="nightly", informative=["note"]))
    assert len(SimHashIndex.load(folder)) == 3
    rewrite(folder, lambda m: later(m, informative="note"))
    with pytest.raises(BundleError, match="'informative' must be a list of key names"):
        SimHashIndex.load(folder)


def test_a_newer_format_is_refused_naming_its_version_and_writer(tmp_path):
    folder = saved(tmp_path)
    rewrite(folder, lambda m: (later(m), m.update(format_version=3)))
    with pytest.raises(BundleError) as error:
        SimHashIndex.load(folder)
    assert (
        "format 'gpusimhash-index' version 3, written by gpusimhash 9.0.0, is newer than this "
        "release reads (version 1 or 2)"
    ) in str(error.value)


def test_dedup_against_an_index_with_an_unknown_key_fails_before_any_work(tmp_path, capsys):
    folder = saved(tmp_path)
    rewrite(folder, lambda m: later(m, stemmer="porter"))
    source = tmp_path / "in.txt"
    source.write_text("".join(t + "\n" for t in TEXTS))
    out = tmp_path / "out"
    assert main(["dedup", str(source), "--against", str(folder), "--out", str(out), "-q"]) == 1
    assert "metadata key 'stemmer' is unknown to this release" in capsys.readouterr().err
    assert not (out / "kept.jsonl").exists()
