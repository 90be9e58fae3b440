"""What the extender serves: the FastAPI app (app.py, the composition root; routes.py, one function
per endpoint), its Prometheus metrics (metrics.py) and the uvicorn server thread (server.py). A shell."""
