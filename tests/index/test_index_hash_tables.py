"""A multi-hash index's hash tables, as saved: checked against its codes, rebuilt where unsound.

FAISS writes each key's count of ids in as many bits as an id: one code, or a key holding every
code where their number is a power of two, loads with codes under no key. Such an index, or one
whose tables were edited with the checksums recomputed, still finds every code once loaded.
"""

import json
import logging

import faiss
import numpy as np
import pytest

from gpusimhash import SimHashIndex
from gpusimhash._cpu._hash_maps import FAULTS, map_fault
from gpusimhash.index._loaded import hash_tables_fault
from gpusimhash.io import bundle


def _codes(n, identical, bits=64, seed=0):
    codes = np.random.default_rng(seed).integers(0, 256, (n, bits // 8), dtype=np.uint8)
    if identical:
        codes[:] = codes[0]
    return codes


def _saved(folder, codes, hash_bits=16):
    index = SimHashIndex(codes.shape[1] * 8, kind="multihash", hash_bits=hash_bits)
    index.add(codes)
    index.save(folder)
    return index


def _faiss_file(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    return folder / manifest["files"]["index"]["file"]


def _fault(file):
    """`hash_tables_fault` of a saved FAISS file (its id map kept alive while it is read)."""
    loaded = faiss.read_index_binary(str(file))
    return hash_tables_fault(file, faiss.downcast_IndexBinary(loaded.index))


def _found(index, codes):
    """Each code's ids within distance 0, from a radius search of the hash tables."""
    found = index.range_search(codes, max_distance=0)
    return [
        sorted(found.ids[a:b].tolist())
        for a, b in zip(found.lims[:-1], found.lims[1:], strict=True)
    ]


@pytest.mark.parametrize(
    ("n", "identical", "faulty"),
    [(1, False, True), (2, True, True), (4, True, True), (8, True, True), (5, True, False)],
)
def test_few_or_identical_codes_are_all_found_once_loaded(tmp_path, n, identical, faulty):
    codes = _codes(n, identical)
    saved = _saved(tmp_path / "idx", codes)
    file = _faiss_file(tmp_path / "idx")
    assert (_fault(file) is not None) == faulty  # FAISS's own writing
    loaded = SimHashIndex.load(tmp_path / "idx")
    assert _found(loaded, codes) == _found(saved, codes)
    assert _found(loaded, codes[:1]) == ([list(range(n))] if identical else [[0]])


def test_a_table_edited_after_saving_is_rebuilt_from_the_codes(tmp_path, caplog):
    codes = _codes(40, identical=False)
    saved = _saved(tmp_path / "idx", codes)
    file = _faiss_file(tmp_path / "idx")
    data = bytearray(file.read_bytes())
    header = 4 + 21  # each part's four-character code and binary index header
    tables = 3 * header + 8 + codes.nbytes + 12  # past the storage and (b, nhash, nflip)
    data[tables + 20] ^= 1  # the first key of table 0, its lowest bit
    file.write_bytes(bytes(data))
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    manifest["files"]["index"]["sha256"] = bundle.sha256_file(file)
    body = {key: manifest[key] for key in ("format", "format_version", "files", "metadata")}
    manifest["manifest_sha256"] = bundle._self_checksum(body)
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(manifest))
    assert _fault(file).startswith("hash table 0: an id filed under another")
    with caplog.at_level(logging.INFO, logger="gpusimhash"):
        loaded = SimHashIndex.load(tmp_path / "idx")
    assert "its hash tables are rebuilt from its codes" in caplog.text
    assert _found(loaded, codes) == _found(saved, codes) == [[k] for k in range(40)]


@pytest.mark.parametrize(("bits", "hash_bits", "n"), [(64, 16, 1000), (48, 12, 300), (64, 5, 77)])
def test_sound_tables_are_read_as_saved(tmp_path, caplog, bits, hash_bits, n):
    codes = _codes(n, identical=False, bits=bits)
    _saved(tmp_path / "idx", codes, hash_bits)
    file = _faiss_file(tmp_path / "idx")
    assert _fault(file) is None
    with caplog.at_level(logging.INFO, logger="gpusimhash"):
        SimHashIndex.load(tmp_path / "idx")
    assert "rebuilt" not in caplog.text


def _table(entries, b, id_bits):
    """A table's bytes as FAISS writes them: key, count and ids, least significant bit first."""
    value, at = 0, 0
    for key, ids in entries:
        for field, width in ((key, b), (len(ids), id_bits), *((i, id_bits) for i in ids)):
            value |= field << at
            at += width
    return np.frombuffer(value.to_bytes((at + 7) // 8 or 1, "little"), dtype=np.uint8)


CODES = np.array([[0x34, 0x12], [0x34, 0x12], [0xCD, 0xAB]], dtype=np.uint8)  # keys of 16 bits


@pytest.mark.parametrize(
    ("entries", "n_keys", "fault"),
    [
        ([(0x1234, [0, 1]), (0xABCD, [2])], 2, None),
        ([(0x1234, [0, 0]), (0xABCD, [2])], 2, "an id filed twice"),
        ([(0x1234, [0, 3])], 1, "an id past the stored codes"),
        ([(0x1234, [0, 2])], 1, "an id filed under another key than its code's"),
        ([(0x1234, [0, 1])], 1, "a stored code filed under no key"),
        ([(0x1234, [0, 1])], 2, "an entry runs past the table"),
    ],
)
def test_each_fault_of_a_table_is_found(entries, n_keys, fault):
    found, ident = map_fault(_table(entries, 16, 2), 16, 2, n_keys, CODES, 0)
    assert FAULTS[found] == fault
    assert (ident >= 0) == (fault is not None and "runs past" not in fault)


def test_a_file_not_laid_out_as_a_multi_hash_index_is_named(tmp_path):
    _saved(tmp_path / "idx", _codes(9, identical=False))
    file = _faiss_file(tmp_path / "idx")
    loaded = faiss.read_index_binary(str(file))
    short = tmp_path / "short"
    short.write_bytes(file.read_bytes()[:100])  # its codes cut short
    fault = hash_tables_fault(short, faiss.downcast_IndexBinary(loaded.index))
    assert fault.startswith("not laid out as a multi-hash index's file")


def test_a_count_past_the_table_is_found_without_reading_past_it():
    table = _table([(0x1234, [0])], 16, 4).copy()  # 24 bits: key, count, one id
    table[2] |= 0xF  # the count's 4 bits: 15 ids where the table holds 1
    assert FAULTS[map_fault(table, 16, 4, 1, CODES, 0)[0]] == "an entry runs past the table"
    huge = np.full(16, 0xFF, dtype=np.uint8)  # keys and counts of all ones, 62-bit ids
    assert FAULTS[map_fault(huge, 2, 62, 1, CODES, 0)[0]] == "an entry runs past the table"
    with pytest.raises(ValueError, match="ids of 64 bits"):
        map_fault(table, 16, 64, 1, CODES, 0)
