"""The live emulator's boards report the activity of the job holding them, as the benchmark's telemetry does."""

from __future__ import annotations

from dataclasses import replace

from joulie_hwprofiles.schema import builtin_profile
from joulie_simhw.gpustate import GpuState
from joulie_simulator.emulation.boardsignals import with_signals
from joulie_simulator.emulation.emulator import Emulator, Fault
from joulie_simulator.emulation.render import gpus_json
from joulie_simulator.physics.gpu import Phase
from joulie_simulator.physics.gpusignals import QUIET, board_signals, draw_traits
from joulie_simulator.physics.model import GpuJob, Load, initial_state

P = builtin_profile("nvidia-h100-sxm-8gpu")


def _ticked(load: Load, seed: int = 7, ticks: int = 3) -> Emulator:
    emu = Emulator([("g0", P)], telemetry_seed=seed)
    emu.set_load("g0", load)
    for _ in range(ticks):
        emu.tick()
    return emu


def test_a_memory_bound_job_reads_more_dram_and_less_tensor_activity_than_a_compute_bound_one() -> None:
    load = Load(
        gpu_util=(0.9, 0.9),
        gpu_jobs=(
            GpuJob(0, "decode-1", 0.2, "ml", "decode-1", "work"),
            GpuJob(1, "train-1", 0.9, "ml", "train-1", "work"),
        ),
    )
    emu = _ticked(load)
    mem, comp = (g.signals for g in emu.shown(emu.nodes["g0"])[0].gpus[:2])
    assert mem is not None and comp is not None
    assert mem.dram_active > comp.dram_active + 0.2 and comp.tensor_active > mem.tensor_active + 0.1
    for s in (mem, comp):
        assert all(0.0 <= v <= 1.0 for v in (s.utilization, s.sm_active, s.tensor_active, s.dram_active))
        assert 345 <= s.sm_clock_mhz <= 1980


def test_signals_are_the_benchmarks_model_for_the_job_and_its_seed() -> None:
    st = replace(initial_state(P, "g0"), load=Load(gpu_util=(0.8,), gpu_jobs=(GpuJob(0, "job-a", 0.4),)))
    got = with_signals(P, st, seed=11, noise=QUIET).gpus[0].signals
    b, phys, spec = st.gpus[0], P.physics.gpu, P.gpus
    assert phys is not None and spec is not None
    want = board_signals(
        phys,
        spec.sm_clock_max_mhz,
        (Phase(1.0, 0.4, 0.8),),
        b.enforced_w,
        1.0,
        draw_traits(11, "job-a"),
        power_w=b.power_w,
    )
    assert got is not None and (got.dram_active, got.sm_active) == (want.dram_active, want.sm_active)
    # Another seed draws the job's own constants anew; the noise is seeded per tick (reproducible).
    other = with_signals(P, st, seed=12, noise=QUIET).gpus[0].signals
    assert other is not None and other.dram_active != got.dram_active
    noisy = [with_signals(P, replace(st, tick=t), seed=11).gpus[0].signals for t in (5, 5, 6)]
    assert noisy[0] == noisy[1] != noisy[2]


def test_an_idle_board_reads_zero_activity_at_its_lowest_clock_and_gpus_json_carries_it() -> None:
    emu = _ticked(Load(gpu_util=(0.9,), gpu_jobs=(GpuJob(0, "j", 0.5),)))
    shown = emu.shown(emu.nodes["g0"])[0]
    idle = shown.gpus[3].signals
    assert idle is not None and (idle.utilization, idle.dram_active, idle.sm_clock_mhz) == (0.0, 0.0, 345.0)
    boards = GpuState.from_json(gpus_json(P, shown)).gpus
    busy = shown.gpus[0].signals
    assert busy is not None
    assert boards[0].dram_active == round(busy.dram_active, 3) and boards[0].sm_clock_mhz == round(busy.sm_clock_mhz)
    assert boards[0].util_pct == round(100 * busy.utilization)
    assert (boards[3].dram_active, boards[3].util_pct) == (0.0, 0)


def test_amd_boards_get_no_activity() -> None:
    amd = builtin_profile("amd-instinct-mi300x-8gpu")
    st = replace(initial_state(amd, "a0"), load=Load(gpu_util=(0.9,)))
    assert all(g.signals is None for g in with_signals(amd, st, seed=1).gpus)


def test_the_activity_is_drawn_once_per_tick_at_the_first_read_as_the_tick_would_have_drawn_it() -> None:
    emu = Emulator([("g0", P)], telemetry_seed=7)
    emu.set_load("g0", Load(gpu_util=(0.9,), gpu_jobs=(GpuJob(0, "j", 0.5),)))
    n = emu.nodes["g0"]
    assert all(g.signals is None for g in emu.shown(n)[0].gpus)  # before the first tick: no activity yet
    emu.tick()
    first = emu.shown(n)[0]
    assert first == with_signals(P, n.state, seed=7)
    assert emu.shown(n)[0] is first  # one draw per tick, however many reads
    emu.tick()
    second = emu.shown(n)[0]
    assert second.gpus[0].signals != first.gpus[0].signals  # the noise is the tick's
    emu.inject_fault("g0", Fault("stale_counters"))
    emu.tick()
    emu.tick()
    assert emu.shown(n)[0].gpus == second.gpus  # stale: the tools read the last tick's again


def test_a_read_of_gpus_json_carries_the_ticks_activity() -> None:
    emu = _ticked(Load(gpu_util=(0.9,), gpu_jobs=(GpuJob(0, "j", 0.5),)))
    boards = GpuState.from_json(emu.read("g0", "state/gpus.json").decode()).gpus
    busy = emu.shown(emu.nodes["g0"])[0].gpus[0].signals
    assert busy is not None and boards[0].dram_active == round(busy.dram_active, 3)


def test_the_drawn_state_equals_the_one_replace_would_build_and_leaves_the_tick_alone() -> None:
    # with_signals copies the boards and the state with physics.model.moved (replace's field-by-field
    # __init__ was a third of the draw): every other field must come across, the ticked state untouched.
    p = builtin_profile("nvidia-h100-nvl-8gpu")
    st = initial_state(p, "node-3")
    st = replace(st, load=Load(cpu_util=0.5, gpu_util=(0.9, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0, 1.0)), tick=7)
    before = repr(st)
    shown = with_signals(p, st, seed=11)
    assert repr(st) == before
    assert shown is not st and shown.gpus is not st.gpus
    assert shown == replace(st, gpus=tuple(replace(g, signals=s.signals) for g, s in zip(st.gpus, shown.gpus, strict=True)))
    assert all(type(s) is type(g) and s.signals is not None for g, s in zip(st.gpus, shown.gpus, strict=True))
    assert shown.gpus[0].signals != shown.gpus[1].signals  # a busy board and an idle one
