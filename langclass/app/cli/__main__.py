"""``python -m langclass.app.cli``: the command line (the same as the ``langclass`` console script)."""

from langclass.app.cli.commands import main

main()
