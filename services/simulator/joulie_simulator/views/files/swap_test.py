"""Atomic replacement: a reader sees the old or the new content, never a torn one."""

import os
from pathlib import Path

from joulie_simulator.views.files.swap import swap_in


def test_a_replaced_file_keeps_its_mode_and_readers_see_whole_contents(tmp_path: Path) -> None:
    path, scratch = str(tmp_path / "gpus.json"), str(tmp_path / "scratch")
    swap_in(scratch, path, b'{"a": 1}\n', 0o444)  # no file yet: a plain rename
    first = os.stat(path).st_ino
    swap_in(scratch, path, b'{"a": 22}\n', 0o444)
    swap_in(scratch, path, b'{"b": 3}\n', 0o444)  # shorter than the scratch file's content
    assert Path(path).read_bytes() == b'{"b": 3}\n' and os.stat(path).st_mode & 0o777 == 0o444
    assert os.stat(path).st_ino == first  # the two files traded places twice
