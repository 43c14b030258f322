#!/usr/bin/env python3
"""Normalise a CSV export: delimiter, whitespace, duplicates, dates and decimals."""

import argparse
import csv
import datetime
import pathlib
import re

DATE_FORMATS = ("%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d", "%d.%m.%Y")


def normalise_date(value: str) -> str:
    for fmt in DATE_FORMATS:
        try:
            return datetime.datetime.strptime(value, fmt).date().isoformat()
        except ValueError:
            continue
    return value


def clean_cell(value: str, decimal_comma: bool) -> str:
    value = re.sub(r"\s+", " ", value).strip()
    if decimal_comma and re.fullmatch(r"-?\d+(\.\d{3})*,\d+", value):
        value = value.replace(".", "").replace(",", ".")
    return normalise_date(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--decimal-comma", action="store_true")
    args = parser.parse_args()
    text = args.input.read_text(encoding="utf-8-sig")
    dialect = csv.Sniffer().sniff(text.splitlines()[0])
    seen: set[tuple[str, ...]] = set()
    rows_in = rows_out = 0
    with args.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for row in csv.reader(text.splitlines(), dialect):
            rows_in += 1
            cleaned = tuple(clean_cell(c, args.decimal_comma) for c in row)
            if cleaned in seen:
                continue
            seen.add(cleaned)
            writer.writerow(cleaned)
            rows_out += 1
    print(f"rows in {rows_in}, rows out {rows_out}, duplicates dropped {rows_in - rows_out}")


if __name__ == "__main__":
    main()
