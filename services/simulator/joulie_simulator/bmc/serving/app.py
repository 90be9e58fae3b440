"""One emulated node's BMC as a FastAPI app: Redfish over HTTP(S), driven by the Emulator.

The BMC keeps no truth of its own: every GET reads the emulator (power state, host watts) and a
reset calls ``Emulator.power_on``/``power_off``. What it keeps is what a BMC keeps: its login
sessions. Authentication is a Redfish session (``X-Auth-Token`` from ``POST
SessionService/Sessions``) or HTTP Basic; only the service root (``/redfish``, ``/redfish/v1/``)
answers without one, as DSP0266 requires. Nothing here logs a password or a token.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import secrets
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from joulie_common.yamlload import YamlError, load_yaml
from joulie_simulator.bmc import resources as rf
from joulie_simulator.emulation.emulator import Emulator, PowerStateError
from joulie_simulator.emulation.powerfaults import PowerOnFaults


@dataclass(frozen=True)
class BmcCredentials:
    username: str
    password: str = field(repr=False)


class CredentialsError(ValueError):
    """A credentials file that cannot be used: ``<file>: <field>: <why>`` (never the value)."""


def load_credentials(path: Path) -> BmcCredentials:
    """``username`` and ``password`` (YAML or JSON) that every emulated BMC accepts; a file, not a
    flag, so that the password shows in no process listing."""
    try:
        doc = load_yaml(path, mapping=True)
    except YamlError as e:
        raise CredentialsError(str(e)) from None
    for key in ("username", "password"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise CredentialsError(f"{path}: {key}: a non-empty string is required")
    extra = sorted(set(doc) - {"username", "password"})
    if extra:
        raise CredentialsError(f"{path}: {extra[0]}: unknown key (username and password only)")
    return BmcCredentials(doc["username"], doc["password"])


@dataclass
class _Sessions:
    by_token: dict[str, tuple[str, str]] = field(default_factory=dict)  # token -> (session id, user)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _json(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    h = {"OData-Version": "4.0", **(headers or {})}
    return JSONResponse(body, status_code=status, headers=h, media_type="application/json")


def _fail(f: rf.RedfishFailure) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Basic realm="Joulie emulated BMC"'} if f.status == 401 else None
    return _json(rf.error_body(f), f.status, headers)


class _Bmc:
    """What one node's BMC keeps and reads: the emulator and node it fronts, the credentials it
    accepts, its login sessions."""

    def __init__(self, emu: Emulator, node: str, credentials: BmcCredentials,
                 faults: PowerOnFaults | None = None) -> None:
        self.emu = emu
        self.faults = faults
        self.node = node
        self.credentials = credentials
        self.sessions = _Sessions()
        self.service_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"joulie-bmc://{node}"))
        self.profile = emu.node(node).profile

    def user_of(self, request: Request) -> str | None:
        token = request.headers.get("x-auth-token")
        if token is not None:
            with self.sessions.lock:
                hit = self.sessions.by_token.get(token)
            return hit[1] if hit else None
        auth = request.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return user if self.match(user, password) else None

    def match(self, user: str, password: str) -> bool:
        # Both compared in constant time: a wrong user and a wrong password take the same time.
        ok_user = hmac.compare_digest(user.encode(), self.credentials.username.encode())
        ok_password = hmac.compare_digest(password.encode(), self.credentials.password.encode())
        return ok_user and ok_password

    def power_state(self) -> str:
        return self.emu.power_state(self.node)

    def watts(self) -> float:
        with self.emu.lock:
            return float(self.emu.node(self.node).state.host_power_w)


def create_app(emu: Emulator, node: str, credentials: BmcCredentials, faults: PowerOnFaults | None = None) -> FastAPI:
    """The BMC of ``node`` (which must be emulated by ``emu``); ``faults``: a share of its power-ons
    refused or hung (``emulation/powerfaults.py``)."""
    emu.node(node)
    app = FastAPI(title=f"emulated BMC of {node}", openapi_url=None, docs_url=None, redoc_url=None)
    bmc = _Bmc(emu, node, credentials, faults)
    _add_errors_and_authentication(app, bmc)
    _add_service_root(app, bmc)
    _add_system(app, bmc)
    _add_chassis(app, bmc)
    _add_manager(app, bmc)
    _add_sessions(app, bmc)
    return app


def _add_errors_and_authentication(app: FastAPI, bmc: _Bmc) -> None:
    """Errors as Redfish error bodies; every path but the service root needs a session or Basic."""

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return _fail(rf.not_found(request.url.path))
        if exc.status_code == 405:
            return _fail(rf.RedfishFailure(405, "OperationNotAllowed",
                                           f"The HTTP method {request.method} is not allowed on the resource at '{request.url.path}'."))
        return _fail(rf.RedfishFailure(exc.status_code, "GeneralError", str(exc.detail)))

    @app.middleware("http")
    async def _authenticate(request: Request, call_next: Any) -> Any:
        path = request.url.path.rstrip("/")
        public = path in ("/redfish", rf.V1) or (path == rf.SESSIONS and request.method == "POST")
        if not public and bmc.user_of(request) is None:
            return _fail(rf.NO_VALID_SESSION)
        return await call_next(request)


def _add_service_root(app: FastAPI, bmc: _Bmc) -> None:
    @app.get("/redfish")
    @app.get("/redfish/")
    def versions() -> JSONResponse:
        return _json({"v1": f"{rf.V1}/"})

    @app.get("/redfish/v1")
    @app.get("/redfish/v1/")
    def root() -> JSONResponse:
        return _json(rf.service_root(bmc.service_uuid))


def _add_system(app: FastAPI, bmc: _Bmc) -> None:
    """The computer system and its reset action (the emulator's power on and off)."""
    emu, node, profile = bmc.emu, bmc.node, bmc.profile

    @app.get("/redfish/v1/Systems")
    def systems() -> JSONResponse:
        return _json(rf.collection(f"{rf.V1}/Systems", "ComputerSystemCollection", "Computer System Collection", [rf.SYSTEM]))

    @app.get(rf.SYSTEM)
    def system() -> JSONResponse:
        memory_gib = round(profile.node.memory_ki / 1024**2, 1)
        return _json(rf.system(node, bmc.power_state(), profile.node.cpu, memory_gib))

    @app.post(rf.RESET_TARGET)
    async def reset(request: Request) -> Response:
        try:
            body: Any = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _fail(rf.RedfishFailure(400, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed."))
        with emu.lock:  # the decision and the action on one state
            action = rf.reset_action(body, bmc.power_state())
            if isinstance(action, rf.RedfishFailure):
                return _fail(action)
            answer = bmc.faults.draw(node) if action == "power_on" and bmc.faults is not None else "ok"
            if answer == "refused":
                return _fail(rf.RedfishFailure(500, "InternalError", "The request failed due to an internal service "
                                               "error (emulated fault: --bmc-failure-share). The service is still operational."))
            try:
                if action == "power_on" and answer == "hung":
                    pass  # accepted, and the host never boots (emulated fault: --bmc-hang-share)
                elif action == "power_on":
                    emu.power_on(node)
                elif action == "graceful_off":
                    emu.power_off(node, graceful=True)
                elif action == "force_off":
                    emu.power_off(node, graceful=False)
                else:
                    emu.power_off(node, graceful=False)
                    emu.power_on(node)
            except PowerStateError as e:
                return _fail(rf.RedfishFailure(409, "ActionNotSupported", str(e)))
        return Response(status_code=204)


def _add_chassis(app: FastAPI, bmc: _Bmc) -> None:
    """The chassis, its power reading and its total-power sensor (the emulator's host watts)."""

    @app.get("/redfish/v1/Chassis")
    def chassis_collection() -> JSONResponse:
        return _json(rf.collection(f"{rf.V1}/Chassis", "ChassisCollection", "Chassis Collection", [rf.CHASSIS]))

    @app.get(rf.CHASSIS)
    def chassis() -> JSONResponse:
        return _json(rf.chassis(bmc.node, bmc.power_state()))

    @app.get(f"{rf.CHASSIS}/Power")
    def power() -> JSONResponse:
        return _json(rf.power(bmc.watts()))

    @app.get(f"{rf.CHASSIS}/Sensors")
    def sensors() -> JSONResponse:
        return _json(rf.collection(f"{rf.CHASSIS}/Sensors", "SensorCollection", "Sensors", [rf.TOTAL_POWER_SENSOR]))

    @app.get(rf.TOTAL_POWER_SENSOR)
    def total_power() -> JSONResponse:
        return _json(rf.power_sensor(bmc.watts()))


def _add_manager(app: FastAPI, bmc: _Bmc) -> None:
    @app.get("/redfish/v1/Managers")
    def managers() -> JSONResponse:
        return _json(rf.collection(f"{rf.V1}/Managers", "ManagerCollection", "Manager Collection", [rf.MANAGER]))

    @app.get(rf.MANAGER)
    def manager() -> JSONResponse:
        return _json(rf.manager(bmc.node))


def _add_sessions(app: FastAPI, bmc: _Bmc) -> None:
    """The session service: log in (a token), list, read and delete sessions."""
    sessions = bmc.sessions

    @app.get("/redfish/v1/SessionService")
    def session_service() -> JSONResponse:
        return _json(rf.session_service())

    @app.get(rf.SESSIONS)
    def session_collection() -> JSONResponse:
        with sessions.lock:
            ids = sorted(sid for sid, _ in sessions.by_token.values())
        return _json(rf.collection(rf.SESSIONS, "SessionCollection", "Session Collection", [f"{rf.SESSIONS}/{i}" for i in ids]))

    @app.post(rf.SESSIONS)
    async def login(request: Request) -> JSONResponse:
        try:
            body: Any = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("UserName"), str) or not isinstance(body.get("Password"), str):
            return _fail(rf.RedfishFailure(400, "ActionParameterMissing", "A session is created with the properties UserName and Password."))
        if not bmc.match(body["UserName"], body["Password"]):
            return _fail(rf.RedfishFailure(401, "ResourceAtUriUnauthorized",
                                           f"While accessing the resource at '{rf.SESSIONS}', the service received an authorization error: "
                                           "the user name or the password is not valid."))
        token = secrets.token_urlsafe(24)
        sid = secrets.token_hex(8)
        with sessions.lock:
            sessions.by_token[token] = (sid, body["UserName"])
        location = f"{rf.SESSIONS}/{sid}"
        return _json(rf.session(sid, body["UserName"]), 201, {"X-Auth-Token": token, "Location": location})

    @app.get(rf.SESSIONS + "/{sid}")
    def session(sid: str, request: Request) -> JSONResponse:
        with sessions.lock:
            hit = next((s for s in sessions.by_token.values() if s[0] == sid), None)
        if hit is None:
            return _fail(rf.not_found(request.url.path))
        return _json(rf.session(hit[0], hit[1]))

    @app.delete(rf.SESSIONS + "/{sid}")
    def logout(sid: str, request: Request) -> Response:
        with sessions.lock:
            token = next((t for t, s in sessions.by_token.items() if s[0] == sid), None)
            if token is not None:
                del sessions.by_token[token]
        if token is None:
            return _fail(rf.not_found(request.url.path))
        return Response(status_code=204)
