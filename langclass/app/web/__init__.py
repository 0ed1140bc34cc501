"""Stage 4 of app — web: the REST routes, pages, problem details, body and query reading, access control; imports use cases and below."""
