"""Stage 1 of app — store: tables, database, cursors and the repositories (the only code that touches the database); imports core, models, app.errors and app.settings."""
