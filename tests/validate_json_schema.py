#!/usr/bin/env python3
"""Validates a JSON document against a JSON schema.

Usage: validate_json_schema.py SCHEMA_JSON DOCUMENT_JSON

Exit status: 0 when the document is valid; 1 when it is not valid JSON or violates the schema
(every violation is printed to stderr); 2 on a usage error, an unreadable or invalid schema, or
a missing `jsonschema` module (Debian package python3-jsonschema).
"""

import json
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        import jsonschema
    except ImportError:
        print("validate_json_schema.py: the Python module jsonschema is missing "
              "(apt-get install python3-jsonschema)", file=sys.stderr)
        return 2
    schema_path, document_path = argv[1], argv[2]
    try:
        with open(schema_path, encoding="utf-8") as f:
            schema = json.load(f)
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print(f"{schema_path}: unusable schema: {e}", file=sys.stderr)
        return 2
    try:
        with open(document_path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{document_path}: not valid JSON: {e}", file=sys.stderr)
        return 1
    validator = validator_class(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(document)"
        print(f"{document_path}: {where}: {error.message}", file=sys.stderr)
    if errors:
        print(f"{document_path}: {len(errors)} schema violation(s) "
              f"against {schema_path}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
