"""Search over packed codes: exact and approximate joins, clusters, and the persistent index.

- `exact`: every pair within a Hamming radius, exactly;
- `lsh`: bit-sampling LSH for large radii, with a stated recall;
- `clusters`: clusters of near-duplicates and the document kept for each;
- `index`: `SimHashIndex`, a FAISS binary index with ids, settings and persistence;
- `_join`: what the joins share (the collapsed result, radius arithmetic).
"""
