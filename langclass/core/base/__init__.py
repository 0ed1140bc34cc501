"""Stage 0 of core — base: the error family, limits and deadlines, input checks, wording; imports nothing of langclass."""
