"""Fails when a test writes under its temporary directory (%t/...) before a
RUN line makes it (mkdir -p %t, or split-file into %t).

lit names %t but does not create it; a test that never makes it passes only
where an earlier run of the suite left the directory behind, and fails on a
clean build tree (CI).  Usage: check_temp_dirs.py TEST_DIR
"""

import pathlib
import re
import sys

# mkdir -p %t, mkdir -p %t/sub (which makes %t too) and split-file %s %t.
MAKES_DIR = re.compile(r"(mkdir\s+-p\s+|split-file\s+\S+\s+)%t(?![\w.])")
USES_DIR = re.compile(r"%t/")


def first_problem(path):
    """Returns the line of the first use of %t/ before mkdir -p %t, or None."""
    made = False
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        run = line.find("RUN:")
        if run < 0:
            continue
        command = line[run + 4:]
        use = USES_DIR.search(command)
        make = MAKES_DIR.search(command)
        if make and (use is None or make.start() < use.start()):
            made = True
        if use and not made:
            return number
    return None


def main():
    root = pathlib.Path(sys.argv[1])
    failed = False
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".test", ".mlir") or "Inputs" in path.parts:
            continue
        line = first_problem(path)
        if line is not None:
            print(f"{path.relative_to(root)}:{line}: writes under %t/ before a RUN line "
                  "makes it (add `RUN: rm -rf %t && mkdir -p %t` first)")
            failed = True
    if failed:
        sys.exit(1)
    print("every test makes %t before it writes under it")


if __name__ == "__main__":
    main()
