# SPDX-License-Identifier: MIT
"""Progress of long transfers (store puts and gets): `progress=` takes a callable
progress(done_bytes, total_bytes), True for a bar (tqdm's where tqdm is installed, else a
line on stderr at every tenth), or None / False for nothing."""

import contextlib
import sys
from typing import Any, Callable, Iterator, Optional, Union

from .errors import InvalidArgumentType

ProgressFn = Callable[[int, int], None]
ProgressArg = Union[None, bool, ProgressFn]


class _Lines:
    """A progress report without tqdm: a line on stderr at every tenth of the bytes."""

    def __init__(self, desc: str) -> None:
        self.desc, self.shown = desc, -1

    def __call__(self, done: int, total: int) -> None:
        tenth = done * 10 // total if total else 10
        if tenth > self.shown:
            self.shown = tenth
            print(f"{self.desc}: {done * 100 // max(total, 1)}% ({done} of {total} bytes)", file=sys.stderr)

    def close(self) -> None:
        """Nothing to release."""


class _Bar:
    """A tqdm bar in bytes, made at the first report (when the total is known)."""

    def __init__(self, tqdm: type, desc: str) -> None:
        self.tqdm, self.desc = tqdm, desc
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = self.tqdm(total=total, desc=self.desc, unit="B", unit_scale=True, unit_divisor=1024)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        """Closes the bar, if one was shown."""
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def reporter(progress: ProgressArg, desc: str) -> Iterator[Optional[ProgressFn]]:
    """The callable libcsd calls for `progress` (None for no reports), closed on leaving."""
    if progress is None or progress is False:
        yield None
        return
    if callable(progress):
        yield progress
        return
    if progress is not True:
        raise InvalidArgumentType(f"progress must be a callable(done, total), True, False or None, not {progress!r}")
    try:
        from tqdm.auto import tqdm
        shown: Union[_Bar, _Lines] = _Bar(tqdm, desc)
    except ImportError:
        shown = _Lines(desc)
    try:
        yield shown
    finally:
        shown.close()
