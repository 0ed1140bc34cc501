"""The REST service, its database layer and the command line (FastAPI, SQLAlchemy, Alembic, typer).

Stages, lowest first; a module imports only its own stage or those before it (tests/test_layers.py)::

    {errors, settings} → store → execution → usecases → {web, cli} → main

``errors`` (the service's error family), ``settings`` (every knob, read once) and ``main`` (the
FastAPI application factory, which wires web, store and execution) sit on top of the folders.
"""
