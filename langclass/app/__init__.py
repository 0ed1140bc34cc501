"""The REST service, its database layer and the command line (FastAPI, SQLAlchemy, Alembic, typer)."""
