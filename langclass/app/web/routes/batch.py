"""``POST /v1/languages:batch``: classify and store many languages in one request (bounded).

Each item goes through exactly the path of ``POST /v1/languages`` (the same validation, parsing,
limits, idempotence and labels); an item that fails — a schema-invalid item included (an unknown
key, a wrong type, a NUL: 422 ``validation-error`` naming the field inside the item) — becomes a
problem in its row, never an abort of the others. The answer lists, in input order, each item's
status (201 stored, 200 already stored, or the 4xx/503 of its problem), its id and its problem.
Only the envelope is checked as a whole: a body that is not ``{"languages": [1 … 100 items]}`` is
a 422 for the request.

The path is ``/v1/languages:batch`` (a custom method in the style of Google's API design guide,
AIP-136), not ``/v1/languages/batch``: that one would also be ``/v1/languages/{id}`` with the id
"batch", so its ``Allow`` header would advertise GET, PATCH and DELETE for it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from langclass.core.base.errors import LangclassError
from ..body import JsonBodyRoute
from langclass.app.errors import http_status, problem_dict
from ..problems import problem_responses, validation_problem
from langclass.app.usecases.schemas import LanguageInput
from ..security import require_write_key
from .languages import _budget_end, store_language

__all__ = ["router", "MAX_BATCH_LANGUAGES", "BatchInput", "BatchOutput"]

MAX_BATCH_LANGUAGES = 100
"""Languages per ``POST /v1/languages:batch`` request (``max_batch_languages``); larger sets go in
several requests, or through ``langclass classify --batch`` (no limit, resumable)."""

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute)


class BatchInput(BaseModel):
    """Languages to classify and store (each as the body of ``POST /v1/languages``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"languages": [
        {"regex": "(ab)*", "alphabet": ["a", "b"], "name": "even ab"},
        {"formula": "P(b & Y a)", "alphabet": ["a", "b", "c"]},
    ]}]})

    # LanguageInput | Any: a valid item arrives as a LanguageInput, any other JSON value as it is and
    # gets its validation problem in its row (the schema says so: anyOf [LanguageInput, anything])
    languages: list[LanguageInput | Any] = Field(
        min_length=1, max_length=MAX_BATCH_LANGUAGES,
        description=f"1 to {MAX_BATCH_LANGUAGES} languages, each a LanguageInput; an item that is not one is answered "
                    "in its row (422 validation-error naming the field inside the item), the others are stored")


class BatchItem(BaseModel):
    """The outcome of one language of the batch."""

    index: int = Field(description="position in the request's list (0-based)")
    status: int = Field(description="201 stored, 200 already stored, else the problem's status")
    id: str | None = Field(None, description="the language's fingerprint (when it parsed)")
    name: str | None = None
    classes: dict[str, bool | None] | None = Field(None, description="class key → membership (stored items)")
    problem: dict[str, Any] | None = Field(None, description="the problem (code, title, status, detail, field) of a failed item")


class BatchOutput(BaseModel):
    """Every item's outcome in input order, and the counts."""

    items: list[BatchItem]
    created: int
    existing: int
    errors: int


@router.post(
    "/languages:batch",
    response_model=BatchOutput,
    tags=["languages"],
    summary=f"Classify and store up to {MAX_BATCH_LANGUAGES} languages (each item like POST /v1/languages)",
    openapi_extra={"x-langclass-write-key": True},
    responses=problem_responses(400, 401, 413, 415, 422),
)
async def create_languages(body: BatchInput, request: Request, _key: str | None = Depends(require_write_key)) -> dict[str, Any]:
    """Classify and store each language in turn, each under its own ``LANGCLASS_TIME_LIMIT_S``
    budget (the first counted from the request's arrival); a failing item is reported with its problem and the
    others go on. 200 with ``items`` (input order) and the counts ``created``, ``existing``, ``errors``."""
    items: list[dict[str, Any]] = []
    for i, raw in enumerate(body.languages):
        if isinstance(raw, LanguageInput):
            lang = raw
        else:
            try:
                lang = LanguageInput.model_validate(raw)
            except ValidationError as exc:
                problem = validation_problem(exc.errors(include_url=False, include_input=False), location=f"body.languages[{i}]")
                name = raw.get("name") if isinstance(raw, dict) and isinstance(raw.get("name"), str) else None
                items.append({"index": i, "status": 422, "name": name, "problem": problem})
                continue
        response = Response()
        # a time budget per item: the first from the request's arrival, each next one from its own
        # start (before: one budget for the whole request, so once a slow item spent it every item
        # after it — trivial ones too — was time-limit-exceeded)
        budget_end = _budget_end(request) if i == 0 else request.app.state.runner.budget_end()
        try:
            resource = await store_language(lang, request, response, budget_end=budget_end)
        except LangclassError as err:
            items.append({"index": i, "status": http_status(err), "name": lang.name, "problem": problem_dict(err)})
            continue
        classes = {k: (v.get("member") if isinstance(v, dict) else None) for k, v in (resource.get("classes") or {}).items()}
        items.append({"index": i, "status": response.status_code, "id": resource["id"], "name": resource.get("name"),
                      "classes": classes})
    return {"items": items, "created": sum(it["status"] == 201 for it in items),
            "existing": sum(it["status"] == 200 for it in items), "errors": sum(it["status"] >= 400 for it in items)}
