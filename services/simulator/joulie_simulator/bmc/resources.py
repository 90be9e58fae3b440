"""The Redfish documents an emulated BMC serves, and what a reset does in each power state.

Pure: the documents are built from a node's power state and watts (the emulator's truth), never
from state of their own. The layout is DMTF's (DSP0266, the Redfish schema bundle): a service root,
``Systems/1`` with ``PowerState`` and the ``#ComputerSystem.Reset`` action, ``Chassis/1`` with the
(deprecated but universal) ``Power`` resource and the newer ``Sensors`` collection, one
``Managers/1`` (the BMC itself), and a ``SessionService``. Error bodies are Redfish's
``{"error": {"code", "message", "@Message.ExtendedInfo": [...]}}`` with Base registry message ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

V1 = "/redfish/v1"
SYSTEM = f"{V1}/Systems/1"
CHASSIS = f"{V1}/Chassis/1"
MANAGER = f"{V1}/Managers/1"
SESSIONS = f"{V1}/SessionService/Sessions"
RESET_TARGET = f"{SYSTEM}/Actions/ComputerSystem.Reset"
RESET_TYPES = ("On", "ForceOff", "GracefulShutdown", "ForceRestart")
BASE = "Base.1.16.0"

# The emulator's power states (joulie_simulator.emulation.emulator.PowerState) as Redfish's PowerState enum.
REDFISH_POWER_STATE = {"on": "On", "off": "Off", "booting": "PoweringOn", "shutting-down": "PoweringOff"}


@dataclass(frozen=True)
class RedfishFailure:
    """An answer that is an error: HTTP status, Base message id (without the registry version), text."""

    status: int
    message_id: str
    message: str
    resolution: str = ""


def error_body(f: RedfishFailure) -> dict[str, Any]:
    info = {
        "@odata.type": "#Message.v1_1_1.Message",
        "MessageId": f"{BASE}.{f.message_id}",
        "Message": f.message,
        "Severity": "Warning" if f.status < 500 else "Critical",
        "MessageSeverity": "Warning" if f.status < 500 else "Critical",
    }
    if f.resolution:
        info["Resolution"] = f.resolution
    return {
        "error": {
            "code": f"{BASE}.GeneralError",
            "message": "A general error has occurred. See ExtendedInfo for more information.",
            "@Message.ExtendedInfo": [info],
        }
    }


def not_found(path: str) -> RedfishFailure:
    return RedfishFailure(404, "ResourceMissingAtURI", f"The resource at the URI '{path}' was not found.")


NO_VALID_SESSION = RedfishFailure(
    401, "NoValidSession", "There is no valid session established with the implementation.",
    "Establish a session (POST SessionService/Sessions) or send valid HTTP Basic credentials.",
)


# -- resets ---------------------------------------------------------------------------------------

ResetAction = Literal["power_on", "graceful_off", "force_off", "force_restart"]


def reset_action(body: Any, power_state: str) -> ResetAction | RedfishFailure:
    """What ``POST .../Actions/ComputerSystem.Reset`` with ``body`` does to a node in ``power_state``.

    A reset the state does not allow is 409 Conflict (as iDRAC and iLO answer, e.g. On while on);
    a missing or unknown ResetType is 400 with the Base registry's parameter messages."""
    if not isinstance(body, dict) or "ResetType" not in body:
        return RedfishFailure(400, "ActionParameterMissing",
                              "The action ComputerSystem.Reset requires the parameter ResetType to be present in the request body.")
    kind = body["ResetType"]
    if kind not in RESET_TYPES:
        return RedfishFailure(400, "ActionParameterValueNotInList",
                              f"The value '{kind}' for the parameter ResetType in the action ComputerSystem.Reset is not in the list of "
                              f"acceptable values: {', '.join(RESET_TYPES)}.")
    shown = REDFISH_POWER_STATE.get(power_state, power_state)
    if kind == "On":
        if power_state != "off":
            return _conflict(kind, shown)
        return "power_on"
    if power_state == "off":
        return _conflict(kind, shown)
    if kind == "GracefulShutdown":
        if power_state != "on":
            return _conflict(kind, shown)
        return "graceful_off"
    if kind == "ForceRestart":
        return "force_restart"
    return "force_off"


def _conflict(kind: str, shown: str) -> RedfishFailure:
    return RedfishFailure(409, "ActionNotSupported",
                          f"The action ComputerSystem.Reset with ResetType {kind} is not supported while the system's PowerState is {shown}.",
                          "Wait for the power state to settle, or use a ResetType the current PowerState allows.")


# -- documents ------------------------------------------------------------------------------------


def _link(path: str) -> dict[str, str]:
    return {"@odata.id": path}


def collection(path: str, odata_type: str, name: str, members: list[str]) -> dict[str, Any]:
    return {
        "@odata.id": path,
        "@odata.type": f"#{odata_type}.{odata_type}",
        "Name": name,
        "Members": [_link(m) for m in members],
        "Members@odata.count": len(members),
    }


def service_root(uuid: str) -> dict[str, Any]:
    return {
        "@odata.id": f"{V1}/",
        "@odata.type": "#ServiceRoot.v1_16_0.ServiceRoot",
        "Id": "RootService",
        "Name": "Root Service",
        "RedfishVersion": "1.17.0",
        "UUID": uuid,
        "Vendor": "Joulie emulated BMC",
        "Systems": _link(f"{V1}/Systems"),
        "Chassis": _link(f"{V1}/Chassis"),
        "Managers": _link(f"{V1}/Managers"),
        "SessionService": _link(f"{V1}/SessionService"),
        "Links": {"Sessions": _link(SESSIONS)},
        "ProtocolFeaturesSupported": {"ExpandQuery": {"ExpandAll": False}, "SelectQuery": False, "FilterQuery": False},
    }


def _status(power_state: str) -> dict[str, str]:
    return {"State": "Enabled" if power_state == "on" else "StandbyOffline", "Health": "OK"}


def system(node: str, power_state: str, cpus: int, memory_gib: float) -> dict[str, Any]:
    return {
        "@odata.id": SYSTEM,
        "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
        "Id": "1",
        "Name": node,
        "HostName": node,
        "SystemType": "Physical",
        "Manufacturer": "Joulie",
        "Model": "Emulated node",
        "PowerState": REDFISH_POWER_STATE[power_state],
        "Status": _status(power_state),
        "ProcessorSummary": {"LogicalProcessorCount": cpus},
        "MemorySummary": {"TotalSystemMemoryGiB": memory_gib},
        "Actions": {
            "#ComputerSystem.Reset": {
                "target": RESET_TARGET,
                "ResetType@Redfish.AllowableValues": list(RESET_TYPES),
            }
        },
        "Links": {"Chassis": [_link(CHASSIS)], "ManagedBy": [_link(MANAGER)]},
    }


def chassis(node: str, power_state: str) -> dict[str, Any]:
    return {
        "@odata.id": CHASSIS,
        "@odata.type": "#Chassis.v1_25_0.Chassis",
        "Id": "1",
        "Name": f"{node} chassis",
        "ChassisType": "RackMount",
        "PowerState": REDFISH_POWER_STATE[power_state],
        "Status": {"State": "Enabled", "Health": "OK"},
        "Power": _link(f"{CHASSIS}/Power"),
        "Sensors": _link(f"{CHASSIS}/Sensors"),
        "Links": {"ComputerSystems": [_link(SYSTEM)], "ManagedBy": [_link(MANAGER)]},
    }


def power(watts: float) -> dict[str, Any]:
    """The chassis' input power as ``PowerControl[0].PowerConsumedWatts`` (what most BMCs fill in)."""
    w = round(watts, 1)
    return {
        "@odata.id": f"{CHASSIS}/Power",
        "@odata.type": "#Power.v1_7_1.Power",
        "Id": "Power",
        "Name": "Power",
        "PowerControl": [
            {
                "@odata.id": f"{CHASSIS}/Power#/PowerControl/0",
                "MemberId": "0",
                "Name": "System Power Control",
                "PowerConsumedWatts": w,
                "Status": {"State": "Enabled", "Health": "OK"},
            }
        ],
        "PowerControl@odata.count": 1,
    }


TOTAL_POWER_SENSOR = f"{CHASSIS}/Sensors/TotalPower"


def power_sensor(watts: float) -> dict[str, Any]:
    return {
        "@odata.id": TOTAL_POWER_SENSOR,
        "@odata.type": "#Sensor.v1_9_0.Sensor",
        "Id": "TotalPower",
        "Name": "Total chassis input power",
        "ReadingType": "Power",
        "Reading": round(watts, 1),
        "ReadingUnits": "W",
        "PhysicalContext": "Chassis",
        "Status": {"State": "Enabled", "Health": "OK"},
    }


def manager(node: str) -> dict[str, Any]:
    return {
        "@odata.id": MANAGER,
        "@odata.type": "#Manager.v1_19_0.Manager",
        "Id": "1",
        "Name": f"{node} BMC",
        "ManagerType": "BMC",
        "Status": {"State": "Enabled", "Health": "OK"},
        "PowerState": "On",
        "Links": {"ManagerForServers": [_link(SYSTEM)], "ManagerForChassis": [_link(CHASSIS)]},
    }


def session_service() -> dict[str, Any]:
    return {
        "@odata.id": f"{V1}/SessionService",
        "@odata.type": "#SessionService.v1_1_9.SessionService",
        "Id": "SessionService",
        "Name": "Session Service",
        "ServiceEnabled": True,
        "SessionTimeout": 1800,
        "Sessions": _link(SESSIONS),
    }


def session(session_id: str, username: str) -> dict[str, Any]:
    return {
        "@odata.id": f"{SESSIONS}/{session_id}",
        "@odata.type": "#Session.v1_7_0.Session",
        "Id": session_id,
        "Name": "User Session",
        "UserName": username,
    }
