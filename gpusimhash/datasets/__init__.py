"""Corpora with ground truth: the synthetic generator and the bundled sample."""
