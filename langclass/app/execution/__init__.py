"""Stage 2 of app — execution: what runs work (isolated processes, the request runner, workers, executors); imports store and below."""
