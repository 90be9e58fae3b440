"""Atomic replacement: a reader sees the old or the new content, never a torn one."""

import os
from pathlib import Path

from joulie_simulator.views.files.swap import swap_in, write_in_place


def test_a_replaced_file_keeps_its_mode_and_readers_see_whole_contents(tmp_path: Path) -> None:
    path, scratch = str(tmp_path / "gpus.json"), str(tmp_path / "scratch")
    swap_in(scratch, path, b'{"a": 1}\n', 0o444)  # no file yet: a plain rename
    first = os.stat(path).st_ino
    swap_in(scratch, path, b'{"a": 22}\n', 0o444)
    swap_in(scratch, path, b'{"b": 3}\n', 0o444)  # shorter than the scratch file's content
    assert Path(path).read_bytes() == b'{"b": 3}\n' and os.stat(path).st_mode & 0o777 == 0o444
    assert os.stat(path).st_ino == first  # the two files traded places twice


def test_written_in_place_the_inode_stays_and_holds_exactly_the_new_content(tmp_path: Path) -> None:
    path = str(tmp_path / "constraint_0_power_limit_uw")
    write_in_place(path, b"250000000\n")  # no file yet: created
    inode = os.stat(path).st_ino
    write_in_place(path, b"90000000\n")  # shorter: no tail of the old number left
    assert Path(path).read_bytes() == b"90000000\n"
    write_in_place(path, b"1250000000\n")  # longer
    assert Path(path).read_bytes() == b"1250000000\n" and os.stat(path).st_ino == inode
