"""The dry-run report in reports/<run>/: summary.json, rows.csv, reset-offsets.csv (when the plan
commits anything), report.md, report.html; a scan's scan.json.

Everything is computed from summary.json's dict and the plan (plan.parquet, or a table);
nothing here re-judges a row. The plan is read a batch at a time, in its order: files that
scale with it (rows.csv, reset-offsets.csv) are written as it goes, and the pages show
bounded extracts (the CSVs hold the rest).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from migrate.diff import plan as p
from migrate.report.html_page import render_html
from migrate.report.markdown_page import render_markdown
from migrate.report.view import Plan, ReportView

ROWS_COLUMNS = ("group", "topic", "partition", "zk_offset", "kafka_offset", "log_start",
                "log_end", "status", "planned_offset", "zk_change", "zk_planned")
RESET_COLUMNS = ("group", "topic", "partition", "planned_offset")
# A translated plan's rows.csv: ZooKeeper's topic and offset on the source, then the target's topic
# and the translated offset (the plan's zk_offset there), side by side.
TRANSLATED_ROWS = (("group", "group"), ("upstream_topic", "source_topic"), ("topic", "topic"),
                   ("partition", "partition"), ("upstream_offset", "zk_offset"),
                   ("zk_offset", "translated_offset"), ("redelivery_window", "reread_at_most"),
                   ("kafka_offset", "kafka_offset"), ("log_start", "log_start"),
                   ("log_end", "log_end"), ("status", "status"),
                   ("planned_offset", "planned_offset"), ("zk_change", "zk_change"),
                   ("zk_planned", "zk_planned"))


def reported(plan: p.Plan) -> p.Plan:
    """`plan` with its report written beside plan.parquet, every file by kind in its `files`."""
    parquet = plan.files["plan"]
    return p.Plan(plan.run, plan.summary,
                  {"plan": parquet, **write_reports(parquet.parent, plan.summary, parquet)})


def write_scan(data: dict[str, Any]) -> None:
    """A scan's counts as its --json prints them, in its report folder (scan.json)."""
    out = Path(data["report"])
    saved = {k: v for k, v in data.items() if k != "report"}
    (out / "scan.json").write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")


def write_reports(out: Path, summary: dict[str, Any], plan: Plan) -> dict[str, Path]:
    """Write every report file into `out` and return their paths by kind.

    A name Kafka's tool cannot parse from reset-offsets.csv adds a warning to
    `summary["warnings"]` (the caller prints those too) before summary.json is written.
    A plan that commits nothing has no reset-offsets.csv: an empty file would read as a plan.
    """
    files = {"summary": out / "summary.json", "rows": out / "rows.csv",
             "reset_offsets": out / "reset-offsets.csv",
             "markdown": out / "report.md", "html": out / "report.html"}
    if (summary.get("no_offset") or {}).get("file"):   # written by the diff, as it found them
        files["no_offset"] = Path(summary["no_offset"]["file"])
    write_rows(plan, files["rows"])
    kept, left_out = write_reset_offsets(plan, files["reset_offsets"])
    if not kept:
        files.pop("reset_offsets").unlink()
    if left_out:
        summary["warnings"].append(
            f"{left_out} planned offset(s) left out of reset-offsets.csv: their group or topic"
            " name holds a comma, quote or line break, which kafka-consumer-groups --from-file"
            " cannot parse")
    view = ReportView.build(summary, plan)
    files["markdown"].write_text(render_markdown(view), encoding="utf-8")
    files["html"].write_text(render_html(view), encoding="utf-8")
    files["summary"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return files


def write_rows(plan: Plan, path: Path) -> None:
    """Every plan row, the columns an operator sorts and filters in a spreadsheet."""
    options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
    columns, header = ROWS_COLUMNS, ROWS_COLUMNS
    if p.is_translated(plan):
        columns, header = zip(*TRANSLATED_ROWS)
    if p.is_renamed(plan):   # the Kafka group beside ZooKeeper's: old and new on every row
        columns, header = (columns[0], p.KAFKA_GROUP, *columns[1:]), \
            (header[0], p.KAFKA_GROUP, *header[1:])
    with path.open("wb") as out:
        # Arrow quotes header names; spreadsheets need not
        out.write((",".join(header) + "\n").encode())
        with pacsv.CSVWriter(out, _schema(columns), write_options=options) as rows:
            for batch in p.plan_batches(plan, list(columns)):
                rows.write_batch(batch)


def write_reset_offsets(plan: Plan, path: Path) -> tuple[int, int]:
    """Rows to commit as `group,topic,partition,offset`, no header: kafka-consumer-groups
    --reset-offsets --from-file reads exactly that (it splits lines on commas, without
    quoting). Returns the rows written and the rows left out."""
    columns = list(RESET_COLUMNS)
    # Kafka's tool commits to Kafka groups: a renamed group's rows go to its Kafka name.
    read = [p.KAFKA_GROUP if p.is_renamed(plan) else "group", *columns[1:]]
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    written = left_out = 0
    with pacsv.CSVWriter(path, _schema(columns), write_options=options) as out:
        for batch in p.plan_batches(plan, ["action", *read]):
            found = batch.filter(pc.equal(batch.column("action"), p.COMMIT)).select(read)
            commits = pa.RecordBatch.from_arrays(found.columns, names=columns)
            unparsable = pc.or_(_unparsable(commits.column("group")),
                                _unparsable(commits.column("topic")))
            kept = commits.filter(pc.invert(unparsable))
            out.write_batch(kept)
            written += kept.num_rows
            left_out += commits.num_rows - kept.num_rows
    return written, left_out


def _schema(columns: Sequence[str]) -> pa.Schema:
    return pa.schema([p.plan_schema(True, renamed=True).field(name) for name in columns])


def _unparsable(names: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.match_substring_regex(names, r'[,"\r\n]')
