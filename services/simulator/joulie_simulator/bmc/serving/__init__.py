"""The emulated BMCs as servers (shells: FastAPI, uvicorn): ``app`` (one node's Redfish service),
``fleet`` (every node's, on free ports, and the published addresses)."""
