#!/usr/bin/python3
"""Validates provider reports against reports/schema/provider-report.schema.json.

usage: validate_report.py SCHEMA REPORT.json...
Debian's python3-jsonschema; one line per invalid report, exit status 1.
"""
import json
import sys

import jsonschema


def main(argv):
    if len(argv) < 3:
        print("usage: validate_report.py SCHEMA REPORT.json...", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    failed = 0
    for path in argv[2:]:
        with open(path) as f:
            report = json.load(f)
        errors = sorted(validator.iter_errors(report), key=lambda e: list(e.path))
        for error in errors[:5]:
            where = "/".join(str(p) for p in error.path) or "(top)"
            print(f"{path}: {where}: {error.message}")
        if errors:
            failed += 1
        else:
            print(f"{path}: valid ({len(report['checks'])} checks)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
