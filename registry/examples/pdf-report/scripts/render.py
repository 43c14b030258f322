#!/usr/bin/env python3
"""Render Markdown notes and CSV tables into a single HTML report ready for PDF printing."""

import argparse
import csv
import html
import pathlib
import string


def table_html(path: pathlib.Path) -> str:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows[1:]
    )
    return f"<h2>{html.escape(path.stem)}</h2><table><tr>{head}</tr>{body}</table>"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", type=pathlib.Path, required=True)
    parser.add_argument("--output", type=pathlib.Path, required=True)
    parser.add_argument("--title", default="Report")
    args = parser.parse_args()
    sections = []
    for path in sorted(args.input.iterdir()):
        if path.suffix == ".csv":
            sections.append(table_html(path))
        elif path.suffix == ".md":
            sections.append(f"<pre>{html.escape(path.read_text(encoding='utf-8'))}</pre>")
    template = pathlib.Path(__file__).parent.parent / "templates" / "report.html"
    page = string.Template(template.read_text(encoding="utf-8")).substitute(
        title=html.escape(args.title), body="\n".join(sections)
    )
    args.output.with_suffix(".html").write_text(page, encoding="utf-8")
    print(f"{len(sections)} sections written to {args.output.with_suffix('.html')}")


if __name__ == "__main__":
    main()
