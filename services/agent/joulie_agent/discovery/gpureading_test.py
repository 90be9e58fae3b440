"""The one nvidia-smi query a cycle: the same devices and boards the separate queries gave, bad lines named."""

from joulie_agent.discovery.gpuactivity import parse_nvidia_activity
from joulie_agent.discovery.gpureading import NVIDIA_READING_QUERY, parse_nvidia_reading
from joulie_agent.discovery.gputools import parse_nvidia_csv

UUID0 = "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd"


def test_the_query_is_one_field_list_in_the_real_tools_syntax() -> None:
    assert [
        "nvidia-smi",
        "--query-gpu=index,power.min_limit,power.max_limit,power.limit,power.draw,enforced.power.limit,uuid,"
        "utilization.gpu,clocks.sm,clocks.max.sm,name",
        "--format=csv,noheader,nounits",
    ] == NVIDIA_READING_QUERY


def test_one_row_gives_what_the_inventory_and_activity_queries_gave() -> None:
    r = parse_nvidia_reading(f"0, 200.00, 700.00, 350.00, 312.50, 700.00, {UUID0}, 96, 1755, 1980, NVIDIA H100 80GB HBM3\n")
    (d,) = r.inventory.devices
    (old,) = parse_nvidia_csv("0, 200.00, 700.00, 350.00, 312.50, NVIDIA H100 80GB HBM3\n").devices
    assert d == old.__class__(**{**old.__dict__, "enforced_w": 700.0})
    assert r.activity.boards == parse_nvidia_activity(f"0, {UUID0}, 96, 1755, 1980\n").boards
    assert (r.inventory.vendor, r.inventory.source, r.inventory.warnings, r.activity.warnings) == (
        "nvidia", "nvidia-smi", [], [])


def test_tokens_are_unknown_never_zero_and_a_name_may_hold_a_comma() -> None:
    r = parse_nvidia_reading("1, [N/A], [N/A], [N/A], [N/A], [Not Supported], [N/A], [N/A], [N/A], [N/A], "
                             "Tesla K80, rev 2\n")
    (d,) = r.inventory.devices
    assert (d.min_w, d.max_w, d.current_cap_w, d.draw_w, d.enforced_w, d.name) == (
        None, None, None, None, None, "Tesla K80,rev 2")  # as parse_nvidia_csv joins it
    (b,) = r.activity.boards
    assert (b.uuid, b.utilization, b.sm_clock_mhz, b.sm_clock_max_mhz) == ("", None, None, None)


def test_a_line_not_understood_is_named_in_both_and_its_board_in_neither() -> None:
    r = parse_nvidia_reading(f"0, 200, 700, 350, 300, 350, {UUID0}, 5, 1000, 1980, H100\n"
                             "1, 200, 700\nx, 200, 700, 350, 300, 350, u, 5, 1000, 1980, H100\n")
    assert [d.index for d in r.inventory.devices] == [0] and [b.index for b in r.activity.boards] == [0]
    assert r.inventory.warnings == r.activity.warnings == [
        "nvidia-smi: line 2: expected 11 fields, got 3: '1, 200, 700'",
        "nvidia-smi: line 3: index 'x' is not an integer",
    ]


def test_an_index_of_too_many_digits_is_a_warning_not_a_crash() -> None:
    # int() refuses more than 4300 digits: the row is left out with its line named, as in parse_nvidia_csv.
    row = "7" * 5000 + ", 200.00, 700.00, 350.00, 312.50, 350.00, 50, 1500, 1980, GPU-x, NVIDIA H100\n"
    reading = parse_nvidia_reading(row)
    assert reading.inventory.devices == [] and reading.inventory.warnings == [
        f"nvidia-smi: line 1: index {'7' * 20!r} is not an integer"]
    assert parse_nvidia_csv(row).warnings == reading.inventory.warnings
