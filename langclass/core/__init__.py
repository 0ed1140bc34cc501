"""Pure-Python core, one folder per stage of the data flow (no web, no torch).

Stages, lowest first; a module imports only its own stage or those before it (tests/test_layers.py)::

    base → automata → logic → ingest → algebra → synthesis → precision → {analysis, drawing, census}

``analysis`` (one language's classification), ``drawing`` (its pictures) and ``census`` (every small
language counted) sit on top and may import every stage.
"""
