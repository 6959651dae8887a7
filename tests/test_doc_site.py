"""The documentation site's generated parts: the API page lists every public name, and every
benchmark table comes from a results file."""

import doctest
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

import gpusimhash
import gpusimhash.distributed

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
_spec = importlib.util.spec_from_file_location("bench_tables", ROOT / "docs" / "bench_tables.py")
assert _spec is not None
assert _spec.loader is not None
bench_tables = importlib.util.module_from_spec(_spec)
sys.modules["bench_tables"] = bench_tables  # dataclasses look their module up
_spec.loader.exec_module(bench_tables)


def test_the_api_page_lists_every_public_name():
    listed = re.findall(r"^   (\w+)$", (ROOT / "docs" / "api.rst").read_text(), re.MULTILINE)
    public = set(gpusimhash.__all__) - {"__version__"}
    assert sorted(public | set(gpusimhash.distributed.__all__)) == sorted(listed)


def test_the_cli_page_is_generated_from_the_parser():
    page = (ROOT / "docs" / "cli.md").read_text()
    assert ":module: gpusimhash.cli" in page
    assert ":func: build_parser" in page


def test_every_results_file_is_shown_or_named_as_not_shown():
    names = {path.name for path in RESULTS.glob("*.json")}
    assert set(bench_tables.SHOWN) <= names
    assert set(bench_tables.NOT_SHOWN) <= names
    assert not set(bench_tables.SHOWN) & set(bench_tables.NOT_SHOWN)


def test_the_pages_name_file_command_and_machine(tmp_path):
    written = bench_tables.write_pages(RESULTS, tmp_path)
    everything = written[0].read_text()
    for path in RESULTS.glob("*.json"):
        if path.name in bench_tables.NOT_SHOWN:
            assert path.name not in everything
            continue
        page = (tmp_path / f"{path.stem}.md").read_text()
        command = json.loads(path.read_text())["command"].strip()
        assert f"- file: `bench/results/{path.name}`" in page
        assert f"- command: `{command}`" in page
        assert "- machine: " in page
        assert "cores" in page
        assert f"({bench_tables.label(path)})=" in everything


def test_a_file_without_a_chosen_table_shows_every_list_of_objects(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "new_bench.json").write_text(
        json.dumps(
            {
                "docs": 1000,
                "results": [{"setting": "a", "seconds": 1.23456}, {"setting": "b", "x": None}],
                "command": "python bench/new_bench.py",
                "machine": {"cpu": "CPU X", "cpu_count": 4, "load_average": [1.5, 1.25, 1.0]},
            }
        )
    )
    page = bench_tables.write_pages(results, tmp_path / "out")[1].read_text()
    assert "- parameters: docs 1,000" in page
    assert "- machine: CPU X, 4 cores, load average 1.5, 1.25, 1" in page
    assert "| setting | seconds |" in page  # x is null in every row: left out
    assert "| a | 1.235 |" in page
    assert "| b | – |" in page


def test_a_chosen_column_no_row_has_is_an_error():
    table = bench_tables.Table(("results",), ("seconds", "sekonds"))
    with pytest.raises(KeyError, match="sekonds"):
        bench_tables.render_table({"results": [{"seconds": 1}]}, table)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (841708, "841,708"),
        (0.14428877199952694, "0.1443"),
        (38.15, "38.15"),
        (1021490.0, "1,021,490"),
        (3.442972892326761e-07, "3.443e-07"),
        (True, "yes"),
        (None, "–"),
        ([1.0, 2.5], "1, 2.5"),
        ("old defaults: 128 bits", "128 bits"),
        ("new defaults: 256 bits", "defaults: 256 bits"),
        ("a|b", "a\\|b"),
    ],
)
def test_cells(value, shown):
    assert bench_tables.cell(value) == shown


def test_the_generator_examples_run():
    assert doctest.testmod(bench_tables).failed == 0
