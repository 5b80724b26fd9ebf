#!/usr/bin/python3
"""Validates JSON documents against a JSON Schema (draft 2020-12).

    validate_json.py SCHEMA FILE... [--expect-invalid FILE]...
                     [--expect-invalid-after FILE POINTER VALUE]...

Each FILE must be valid; each --expect-invalid FILE must not be, nor FILE
with the value at the JSON pointer POINTER (RFC 6901) set to the JSON text
VALUE, or removed when VALUE is DELETE (so that a schema that accepts
anything cannot pass). Exit 0 when all is as expected,
1 when not, 2 for a usage error or a file that is not JSON, 77 when
Debian's python3-jsonschema is missing (ctest: skipped).
"""

import argparse
import json
import sys

try:
    import jsonschema
except ImportError:
    print("skipped: no python3-jsonschema (apt-get install python3-jsonschema)")
    sys.exit(77)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        print(f"{path}: cannot read it as JSON: {error}")
        sys.exit(2)


def mutated(document, pointer, value):
    """document with the value at pointer set to the JSON text value (or removed)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    if not parts:
        raise SystemExit(f"{pointer}: expected a pointer into the document")
    copy = json.loads(json.dumps(document))
    parent = copy
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last = int(parts[-1]) if isinstance(parent, list) else parts[-1]
    if value == "DELETE":
        del parent[last]
    else:
        parent[last] = json.loads(value)
    return copy


def where(error):
    return "/".join(str(part) for part in error.absolute_path) or "(the document)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("schema")
    parser.add_argument("files", nargs="*", help="documents that must be valid")
    parser.add_argument("--expect-invalid", action="append", default=[], metavar="FILE",
                        help="a document that must NOT be valid")
    parser.add_argument("--expect-invalid-after", action="append", nargs=3, default=[],
                        metavar=("FILE", "POINTER", "VALUE"),
                        help="FILE with VALUE (JSON, or DELETE) at POINTER must NOT be valid")
    args = parser.parse_args()
    if not args.files and not args.expect_invalid and not args.expect_invalid_after:
        parser.error("no document to validate")

    schema = load(args.schema)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        print(f"{args.schema}: not a valid draft 2020-12 schema: {error.message}")
        return 1
    validator = jsonschema.Draft202012Validator(schema)

    ok = True
    for path in args.files:
        errors = sorted(validator.iter_errors(load(path)), key=lambda e: list(e.absolute_path))
        for error in errors[:20]:
            print(f"{path}: {where(error)}: {error.message}")
        if errors:
            ok = False
        else:
            print(f"{path}: valid")
    invalid = [(path, load(path)) for path in args.expect_invalid]
    for path, pointer, value in args.expect_invalid_after:
        invalid.append((f"{path} with {pointer} {'removed' if value == 'DELETE' else '= ' + value}",
                        mutated(load(path), pointer, value)))
    for name, document in invalid:
        errors = list(validator.iter_errors(document))
        if errors:
            print(f"{name}: invalid, as expected: {where(errors[0])}: {errors[0].message}")
        else:
            print(f"{name}: valid, but it must not be")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
