# SPDX-License-Identifier: MIT
"""Named checks of one repo check file: each printed as 'ok   WHAT' or 'FAIL WHAT', and
the file's closing line 'NAME: N passed, N failed' (tests/repo/run-repo.py sums them)."""


class Checks:
    """Counts the named checks of one check file."""

    def __init__(self, name: str):
        self.name, self.passed, self.failed = name, 0, 0

    def __call__(self, ok, what: str) -> bool:
        """Counts and prints one check."""
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)
        print(("ok   " if ok else "FAIL ") + what)
        return bool(ok)

    def report(self) -> int:
        """Prints the closing line; returns the exit status (1 on any failure)."""
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
