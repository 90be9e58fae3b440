"""Power states of emulated nodes, as a BMC switches them: off draws standby, counters stop, a boot
lasts the profile's boot time on the ticked clock, a wrong-state action is refused."""

from __future__ import annotations

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import EVENT_POWER, Emulator, PowerStateError
from joulie_simulator.physics.model import Load
from joulie_simulator.serving.http_debug import metrics_text

XEON = builtin_profile("intel-xeon-2s-rapl")
NVL = builtin_profile("nvidia-h100-nvl-8gpu")


def emulator() -> Emulator:
    emu = Emulator([("xeon-0", XEON), ("nvl-0", NVL)], tick_s=1.0, clock=lambda: 0.0)
    emu.frozen = True
    return emu


def counters(emu: Emulator, node: str) -> tuple[float, ...]:
    st = emu.node(node).state
    return (*(s.energy_j for s in st.sockets), *(s.dram_energy_j for s in st.sockets), *(g.energy_j for g in st.gpus))


def test_every_builtin_profile_cites_a_source_for_its_power_state_constants() -> None:
    assert XEON.physics.standby_w == 8 and XEON.physics.boot_s == 240 and XEON.physics.shutdown_s == 20
    assert XEON.physics.power_states.source.startswith("published:intel-server-power")
    # Inherited through extends and overridden where the hardware differs.
    assert builtin_profile("intel-managed").physics.standby_w == 8
    assert builtin_profile("nvidia-h100-sxm-8gpu").physics.standby_w == 30
    assert builtin_profile("vm-no-powercap").physics.standby_w == 0


def test_a_node_starts_on_and_off_it_draws_standby_with_its_counters_still_and_its_load_ignored() -> None:
    emu = emulator()
    emu.set_load("nvl-0", Load(cpu_util=1.0, gpu_util=(1.0,) * 8))
    emu.step(2)
    assert emu.power_state("nvl-0") == "on"
    assert emu.node("nvl-0").state.host_power_w > 3000
    emu.power_off("nvl-0", graceful=False)
    assert emu.power_state("nvl-0") == "off"
    before, host_before = counters(emu, "nvl-0"), emu.node("nvl-0").state.host_energy_j
    emu.set_load("nvl-0", Load(cpu_util=1.0, gpu_util=(1.0,) * 8))  # ignored: nothing runs
    emu.step(10)
    st = emu.node("nvl-0").state
    assert st.host_power_w == pytest.approx(NVL.physics.standby_w)
    assert counters(emu, "nvl-0") == before
    assert st.host_energy_j - host_before == pytest.approx(10 * NVL.physics.standby_w)
    assert st.load == Load()
    t = emu.truth("nvl-0")
    assert t["power"] == {"state": "off", "sinceS": 2.0, "transitionLeftS": 0.0, "boots": 0, "standbyW": 20.0}
    assert t["host"]["powerW"] == 20.0 and all(g["powerW"] == 0 for g in t["gpus"]) and all(p["powerW"] == 0 for p in t["packages"])
    # The other node runs on.
    assert emu.power_state("xeon-0") == "on"


def test_a_graceful_shutdown_takes_the_profiles_shutdown_time() -> None:
    emu = emulator()
    emu.power_off("xeon-0")
    assert emu.power_state("xeon-0") == "shutting-down"
    emu.step(int(XEON.physics.shutdown_s) - 1)
    assert emu.power_state("xeon-0") == "shutting-down"
    emu.step(1)
    assert emu.power_state("xeon-0") == "off"
    assert [e.message for e in emu.events if e.name == EVENT_POWER] == ["shutting-down: graceful shutdown", "off: shut down"]


def test_a_boot_lasts_boot_s_on_the_ticked_clock_then_the_node_is_on_idle_with_default_limits_and_counted() -> None:
    emu = emulator()
    cap = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/constraint_0_power_limit_uw"
    assert emu.write("xeon-0", cap, b"100000000\n").ok
    emu.set_load("xeon-0", Load(cpu_util=0.8))
    emu.power_off("xeon-0", graceful=False)
    emu.step(5)
    emu.power_on("xeon-0")
    assert emu.power_state("xeon-0") == "booting"
    emu.step(int(XEON.physics.boot_s) - 1)
    assert emu.power_state("xeon-0") == "booting"
    booting_w = emu.node("xeon-0").state.host_power_w
    assert booting_w > XEON.physics.standby_w  # POST with the fans on: idle power, not standby
    assert emu.truth("xeon-0")["power"]["transitionLeftS"] == pytest.approx(1.0)
    emu.step(1)
    assert emu.power_state("xeon-0") == "on"
    n = emu.node("xeon-0")
    assert n.boots == 1 and emu.truth("xeon-0")["power"]["boots"] == 1
    assert n.state.load == Load()
    assert emu.read("xeon-0", cap).strip() == b"165000000"  # a power cycle drops the written cap
    assert "xeon-0" in emu.restarted  # the shells rewrite its writable files
    emu.set_load("xeon-0", Load(cpu_util=0.8))
    emu.step(1)
    assert n.state.load.cpu_util == 0.8


@pytest.mark.parametrize(
    ("setup", "action", "message"),
    [
        ([], "on", r"node 'xeon-0': cannot power on: it is on, not off"),
        (["force-off"], "force-off", r"node 'xeon-0': cannot power off: it is already off"),
        (["force-off"], "graceful", r"node 'xeon-0': cannot power off: it is already off"),
        (["force-off", "on"], "graceful", r"cannot shut down gracefully: it is booting, not on"),
        (["force-off", "on"], "on", r"cannot power on: it is booting, not off"),
        (["graceful"], "on", r"cannot power on: it is shutting-down, not off"),
    ],
)
def test_an_action_the_state_does_not_allow_is_refused_naming_the_node_and_the_state(setup: list[str], action: str, message: str) -> None:
    emu = emulator()
    acts = {"on": lambda: emu.power_on("xeon-0"), "force-off": lambda: emu.power_off("xeon-0", graceful=False),
            "graceful": lambda: emu.power_off("xeon-0")}
    for a in setup:
        acts[a]()
    state = emu.power_state("xeon-0")
    with pytest.raises(PowerStateError, match=message):
        acts[action]()
    assert emu.power_state("xeon-0") == state
    assert isinstance(PowerStateError("x"), ValueError)


def test_a_forced_power_off_interrupts_a_boot_or_a_shutdown() -> None:
    emu = emulator()
    emu.power_off("xeon-0")
    emu.power_off("xeon-0", graceful=False)
    assert emu.power_state("xeon-0") == "off"
    emu.power_on("xeon-0")
    emu.step(3)
    emu.power_off("xeon-0", graceful=False)
    assert emu.power_state("xeon-0") == "off"
    assert emu.node("xeon-0").boots == 1


def test_a_node_that_is_not_on_publishes_no_telemetry() -> None:
    emu = emulator()
    emu.step(1)
    emu.power_off("nvl-0", graceful=False)
    emu.step(1)
    text = metrics_text(emu).decode()
    assert 'k8s_node_name="xeon-0"' in text and 'k8s_node_name="nvl-0"' not in text


def test_a_time_scale_shortens_boot_and_shutdown_but_not_the_standby_power() -> None:
    emu = Emulator([("xeon-0", XEON)], tick_s=1.0, clock=lambda: 0.0, power_time_scale=0.1)
    emu.frozen = True
    emu.power_off("xeon-0")
    emu.step(int(XEON.physics.shutdown_s * 0.1))
    assert emu.power_state("xeon-0") == "off"
    emu.step(1)
    assert emu.node("xeon-0").state.host_power_w == XEON.physics.standby_w
    emu.power_on("xeon-0")
    emu.step(int(XEON.physics.boot_s * 0.1) - 1)
    assert emu.power_state("xeon-0") == "booting"
    emu.step(1)
    assert emu.power_state("xeon-0") == "on"
