"""The README's support table is the one rendered from the suite's recorded results, never typed by hand."""

from __future__ import annotations

import json

import support_table


def test_readme_support_table_is_rendered_from_the_results():
    table = support_table.readme_table(support_table.README.read_text())
    assert table is not None, "README.md lost its support-table markers"
    assert table == support_table.render(support_table.load()), (
        "README.md's support table differs from tests/compat/results.json: "
        "run `python tests/compat/support_table.py`")


def test_every_release_the_sandbox_runs_has_a_recorded_result():
    from migrate.jvm.releases import RELEASES

    assert list(support_table.load()["releases"]) == list(RELEASES)


def test_a_failed_step_shows_as_not_proven(tmp_path):
    results = tmp_path / "results.json"
    steps = {s: True for s in support_table.STEPS}
    support_table.record("releases", "9.9.9", {"zookeeper": "3.9", "writer": "w", "proven": steps, "passed": True},
                         results)
    support_table.record("releases", "1.0.0", {"zookeeper": "3.4", "writer": "w",
                                               "proven": {**steps, "resume": False}, "passed": False}, results)
    header, _, old, new = (
        [c.strip() for c in line.strip("|").split("|")]
        for line in support_table.render(json.loads(results.read_text())).splitlines())
    assert (old[0], new[0]) == ("1.0.0 (3.4)", "9.9.9 (3.9)")  # in version order
    resume = header.index(support_table.STEPS["resume"])
    assert (old[resume], old[-1]) == ("**no**", "**no**") and "**no**" not in new
