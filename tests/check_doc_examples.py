#!/usr/bin/env python3
"""Runs the examples of the docs and compares their output, so that the docs cannot drift.

Usage: check_doc_examples.py SPMDCHECK_BINARY SOURCE_DIR [SHARED_DIR]

Every ```console block of README.md and docs/*.md is a session: lines starting with `$ ` are
commands (run by bash from the source root, with `spmdcheck` being SPMDCHECK_BINARY), the lines
after a command up to the next one are its expected output (stdout and stderr together). In the
expected output a line `...` stands for any number of lines, and `...` inside a line for any text.
Paths under `../shared/` are read from SHARED_DIR (default: $SPMDCHECK_SHARED_DIR, else
SOURCE_DIR/../shared); a block that uses it is skipped when it is absent. Paths under `/tmp/` go
to a scratch directory; a command `.venv/bin/python ...` runs the python of the virtual
environment in use. A block opened as ```console xla runs XLA's partitioners: it is skipped
without the project's virtual environment with jax (SPMDCHECK_XLA_VENV, else SOURCE_DIR/.venv),
except under CI=true, where it fails. A block opened as ```console not-checked (a command on files the reader
has, timings, a campaign of random length) is shown but not run. Exit codes are not compared:
the CLI test checks those.

Prints one line per failing command and `N passed, N failed, N skipped` (skipped blocks); exits 1
when any command's output differs.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

TIMEOUT_SECONDS = 300


def blocks(path):
    """Yields (first line number, info string, lines) for each ```console block of `path`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```console(.*)$", lines[i])
        if not m:
            i += 1
            continue
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        yield start, m.group(1).strip(), body
        i += 1


def sessions(body):
    """Splits a block into (command, expected output lines)."""
    out = []
    for line in body:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            raise ValueError("output before the first `$ ` command: " + line)
    return out


def line_matches(pattern, text):
    if "..." not in pattern:
        return pattern == text
    parts = [re.escape(p) for p in pattern.split("...")]
    return re.fullmatch(".*".join(parts), text, flags=re.DOTALL) is not None


def output_matches(expected, actual):
    """True when `actual` lines match `expected` (`...` lines match any run of lines)."""
    # Dynamic programming over (expected position, actual position).
    memo = {}

    def match(e, a):
        key = (e, a)
        if key in memo:
            return memo[key]
        if e == len(expected):
            result = a == len(actual)
        elif expected[e] == "...":
            result = match(e + 1, a) or (a < len(actual) and match(e, a + 1))
        else:
            result = a < len(actual) and line_matches(expected[e], actual[a]) and match(e + 1, a + 1)
        memo[key] = result
        return result

    sys.setrecursionlimit(max(10000, 4 * (len(expected) + len(actual)) + 100))
    return match(0, 0)


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    source = os.path.abspath(sys.argv[2])
    shared = sys.argv[3] if len(sys.argv) == 4 else os.environ.get("SPMDCHECK_SHARED_DIR") or os.path.join(source, "..", "shared")
    shared = os.path.abspath(shared)
    have_shared = os.path.isdir(shared)
    venv = os.environ.get("SPMDCHECK_XLA_VENV") or os.path.join(source, ".venv")
    have_xla = subprocess.run([os.path.join(venv, "bin", "python"), "-c", "import jax"],
                              capture_output=True).returncode == 0 if os.path.exists(
                                  os.path.join(venv, "bin", "python")) else False
    if not have_xla and os.environ.get("CI") == "true":
        print(f"FAIL: no virtual environment with jax at {venv}, and CI=true needs XLA")
        return 1
    docs = [os.path.join(source, "README.md")]
    docs += sorted(
        os.path.join(source, "docs", name)
        for name in os.listdir(os.path.join(source, "docs"))
        if name.endswith(".md")
    )
    scratch = tempfile.mkdtemp(prefix="doc-examples-")
    bindir = os.path.join(scratch, "bin")
    os.mkdir(bindir)
    os.symlink(binary, os.path.join(bindir, "spmdcheck"))
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    passed = failed = skipped = 0
    try:
        for doc in docs:
            relative = os.path.relpath(doc, source)
            for line, info, body in blocks(doc):
                where = f"{relative}:{line}"
                if info == "not-checked":
                    skipped += 1
                    continue
                if info == "xla" and not have_xla:
                    print(f"skipped: {where}: needs jax in {venv}")
                    skipped += 1
                    continue
                if info and info != "xla":
                    print(f"FAIL: {where}: unknown console block option '{info}'")
                    failed += 1
                    continue
                text = "\n".join(body)
                if "../shared/" in text and not have_shared:
                    print(f"skipped: {where}: needs {shared}")
                    skipped += 1
                    continue
                try:
                    steps = sessions(body)
                except ValueError as e:
                    print(f"FAIL: {where}: {e}")
                    failed += 1
                    continue
                workdir = os.path.join(scratch, f"block{passed + failed + skipped}")
                os.mkdir(workdir)

                def local(s):
                    # `/tmp/` that starts a path of the docs goes to the scratch directory first,
                    # so that a checkout, ../shared or a venv under /tmp is left as it is.
                    s = re.sub(r"(?<![\w./-])/tmp/", lambda _: workdir + "/", s)
                    s = s.replace("../shared/", shared + "/")
                    # The project's python in a command runs the virtual environment in use.
                    if s.startswith(".venv/bin/python "):
                        s = os.path.join(venv, "bin", "python") + s[len(".venv/bin/python"):]
                    return s

                for command, expected in steps:
                    expected = [local(e) for e in expected]
                    while expected and expected[-1] == "":
                        expected.pop()
                    try:
                        run = subprocess.run(
                            ["bash", "-o", "pipefail", "-c", local(command)],
                            cwd=source,
                            env=env,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT,
                            timeout=TIMEOUT_SECONDS,
                        )
                        actual = run.stdout.decode("utf-8", errors="replace").split("\n")
                    except subprocess.TimeoutExpired:
                        actual = [f"<timed out after {TIMEOUT_SECONDS}s>"]
                    while actual and actual[-1] == "":
                        actual.pop()
                    if output_matches(expected, actual):
                        passed += 1
                        continue
                    failed += 1
                    print(f"FAIL: {where}: $ {command}")
                    print("  expected:")
                    for e in expected:
                        print("    " + e)
                    print("  got:")
                    for a in actual[:40]:
                        print("    " + a)
                    if len(actual) > 40:
                        print(f"    ... ({len(actual) - 40} more lines)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"docs: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
