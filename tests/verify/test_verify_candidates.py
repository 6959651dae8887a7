import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import fingerprint
from gpusimhash.cluster._pairs import star_clusters
from gpusimhash.fingerprinting import featurize
from gpusimhash.join._exact import near_duplicate_groups
from gpusimhash.verify import _units
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._pairs import verify_pairs
from gpusimhash.verify._units import candidate_documents, verify_candidates

TEXTS = [
    "",
    "...",
    "a b",
    "b a",
    "A B!",
    "a b c",
    "a b c d",
    "a b c d e",
    "c d e",
    "x",
    "x x",
    "y z",
]
documents = st.lists(st.sampled_from(TEXTS), max_size=30)


def run(docs, radius, value, empty):
    codes = fingerprint(docs, bits=16, device="cpu") if docs else np.zeros((0, 2), np.uint8)
    groups = near_duplicate_groups(codes, max_distance=radius)
    rows = candidate_documents(groups)
    features = DocumentFeatures.from_batch(featurize(docs)).take(rows)
    found = verify_candidates(
        groups, features, rows, min_cosine=value, empty_as_duplicates=empty, chunk_pairs=7
    )
    return groups, found


@settings(max_examples=40)
@given(documents, st.integers(0, 16), st.sampled_from([0.5, 0.8, 1.0]), st.booleans())
def test_units_give_exactly_the_verified_document_pairs(docs, radius, value, empty):
    groups, found = run(docs, radius, value, empty)
    pairs, similarity = found.document_pairs()
    expected, expected_similarity = verify_pairs(
        docs, groups.pairs(), min_cosine=value, empty_as_duplicates=empty
    )
    np.testing.assert_array_equal(pairs, expected)
    np.testing.assert_array_equal(similarity, expected_similarity)
    # documents of a unit share their code and their features
    for u in np.unique(found.unit):
        members = np.flatnonzero(found.unit == u)
        assert len({groups.inverse[m] for m in members}) == 1
        assert found.representative[u] == members[0]


@settings(max_examples=20)
@given(documents, st.integers(0, 16), st.sampled_from([0.5, 0.8]))
def test_a_hash_collision_splits_units_and_changes_nothing(docs, radius, value):
    _groups, expected = run(docs, radius, value, False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_units, "feature_hashes", lambda s, o, w: np.zeros(o.size - 1, np.uint64))
        _, colliding = run(docs, radius, value, False)
    for got, want in zip(colliding.document_pairs(), expected.document_pairs(), strict=True):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=30)
@given(documents, st.integers(0, 16), st.sampled_from([0.5, 0.8]), st.booleans())
def test_every_removed_document_reaches_the_threshold_against_its_kept_one(
    docs, radius, value, empty
):
    _, found = run(docs, radius, value, empty)
    stars = star_clusters(found.pairs, found.similarity, len(docs), units=found.unit)
    removed = np.flatnonzero(~stars.keep)
    pairs = np.stack([removed, stars.kept_for[removed]], axis=1)
    checked, _similarity = verify_pairs(docs, pairs, min_cosine=value, empty_as_duplicates=empty)
    assert len(checked) == removed.size
    assert (stars.similarity[removed] >= value).all()


def test_candidate_documents_must_have_features():
    docs = ["a b", "a b", "c"]
    groups = near_duplicate_groups(fingerprint(docs, bits=64), max_distance=0)
    features = DocumentFeatures.from_batch(featurize(docs))
    with pytest.raises(ValueError, match="features of document 1 are needed"):
        verify_candidates(groups, features.take([0]), [0])
    with pytest.raises(ValueError, match="rows must have 3 entries"):
        verify_candidates(groups, features, [0, 1])
    with pytest.raises(ValueError, match="ascending"):
        verify_candidates(groups, features, [0, 2, 1])
