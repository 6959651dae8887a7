"""dedup --output-format csv on JSON lines whose fields vary: a late field widens the CSV."""

import json

from gpusimhash.cli import main

TEXTS = [
    "the river flooded the old mill after three days of heavy rain",
    "our team shipped the new search feature to every customer on friday",
    "the river flooded the old mill after three days of heavy rain",
    "bake the bread until the crust turns a deep golden brown",
    "a quiet street at dawn",
]


def test_a_field_first_seen_in_a_later_batch_becomes_a_column(tmp_path):
    source = tmp_path / "in.jsonl"
    records = [{"text": t} for t in TEXTS]
    records[3]["lang"] = "en"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    args = ["--bits", "64", "--max-distance", "3", "--no-report", "-q", "--batch-size", "2"]
    assert main(["dedup", str(source), "--out", str(out), "--output-format", "csv", *args]) == 0
    assert (out / "kept.csv").read_text().splitlines() == [
        "text,lang",
        f"{TEXTS[0]},",
        f"{TEXTS[1]},",
        f"{TEXTS[3]},en",
        f"{TEXTS[4]},",
    ]
