"""`gpusimhash dedup --pairs`: every near-duplicate pair, with its distance and similarity."""

import json
from itertools import combinations

import pytest

from gpusimhash import TextFeaturizer, fingerprint, hamming
from gpusimhash.cli import main
from gpusimhash.fingerprinting import featurize
from gpusimhash.verify._features import DocumentFeatures

TEXTS = [
    "the river flooded the old mill after three days of heavy rain in the valley",
    "the river flooded the old mill after three days of heavy rain in the valley!",
    "the river flooded the old mill after three days of steady rain in the valley",
    "bake the bread at two hundred degrees until the crust turns a deep golden brown",
    "a quiet library in the north of the city lends tools as well as books to members",
    "the river flooded the old mill after three days of heavy rain in the valley",
]


def run(tmp_path, capsys, *extra):
    path = tmp_path / "docs.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"d{n}", "text": t}) + "\n" for n, t in enumerate(TEXTS))
    )
    out = tmp_path / "out"
    args = ["dedup", path, "--out", out, "--pairs", "--no-report", "-q", "--overwrite", *extra]
    code = main([str(a) for a in args])
    assert code == 0, capsys.readouterr().err
    return [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]


def test_every_verified_pair_with_ids_distance_and_similarity(tmp_path, capsys):
    pairs = run(tmp_path, capsys)
    codes = fingerprint(TEXTS, bits=256, device="cpu")
    features = DocumentFeatures.from_batch(featurize(TEXTS, TextFeaturizer()))
    every = list(combinations(range(len(TEXTS)), 2))
    cosine = features.similarities(every).cosine
    # the oracle: every pair at or above the default threshold (the candidate radius finds them
    # all here: their distances are small)
    expected = [pair for pair, c in zip(every, cosine, strict=True) if c >= 0.8]
    assert [(p["row_a"], p["row_b"]) for p in pairs] == expected
    for p in pairs:
        assert (p["id_a"], p["id_b"]) == (f"d{p['row_a']}", f"d{p['row_b']}")
        assert p["distance"] == int(hamming(codes[p["row_a"]], codes[p["row_b"]])[0])
        assert p["similarity"] == pytest.approx(
            features.similarities([[p["row_a"], p["row_b"]]]).cosine[0]
        )
    assert (0, 5) in [(p["row_a"], p["row_b"]) for p in pairs]  # exact copies: similarity 1


def test_without_verification_the_pairs_within_the_radius(tmp_path, capsys):
    pairs = run(tmp_path, capsys, "--no-verify", "--max-distance", "20")
    codes = fingerprint(TEXTS, bits=256, device="cpu")
    every = list(combinations(range(len(TEXTS)), 2))
    within = [(a, b) for a, b in every if hamming(codes[a], codes[b])[0] <= 20]
    assert [(p["row_a"], p["row_b"]) for p in pairs] == within
    assert {p["similarity"] for p in pairs} == {None}
