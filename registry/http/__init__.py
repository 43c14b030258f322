"""The registry as an HTTP service (FastAPI on uvicorn): `create_app(registry)`."""
