"""One error envelope for every answer that is not a success, with memstore's own error types.

Every error the server sends — a library error, a malformed request FastAPI rejects, an unknown
path or method — has the body `{"error": {"type", "message", "hint", "fields"}, "detail"}`, where
`type` names a class of memstore.core.errors (Python's built-in exceptions are reported as the
memstore error they stand for, so no internal name leaks), and a 405 lists the path's methods in
`Allow`.

>>> envelope(TypeError("f() got an unexpected keyword argument 'x'"))[1]["error"]["type"]
'ArgumentError'
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memstore.core.errors import MemstoreError

# built-in exceptions a library call may still raise -> (memstore error type, HTTP status)
_BUILTIN = ((TypeError, "ArgumentError", 400), (KeyError, "NotFoundError", 404),
            (FileNotFoundError, "MissingFileError", 404), (PermissionError, "ScopeViolation", 403),
            (ValueError, "InvalidInputError", 400))
_HTTP_TYPES = {401: "AuthError", 403: "AuthError", 404: "NotFoundError", 405: "MethodNotAllowed",
               413: "InvalidInputError", 415: "InvalidInputError"}


class ErrorInfo(BaseModel):
    type: str = Field(..., description="The memstore error class, e.g. FilterError (see memstore.core.errors).")
    message: str = Field(..., description="What was wrong and what to do.")
    hint: str = Field("", description="What to do about it.")
    fields: dict[str, Any] = Field(default_factory=dict, description="Structured details (argument, key, ...).")


class ErrorBody(BaseModel):
    """Every error answer of the server."""

    error: ErrorInfo
    detail: Any = Field(..., description="The message again (mem0 clients read `detail`).")


def envelope(exc: BaseException, base: Callable[[BaseException], tuple[int, dict[str, Any]]] | None = None
             ) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for any exception: `base` (the server's mapping of memstore errors to
    statuses, app.error_body) first, then a memstore error type for the built-in ones."""
    if base is not None:
        status, body = base(exc)
    else:
        status, body = 500, {"error": {"type": "ServerError", "message": str(exc)}, "detail": str(exc)}
    if not isinstance(exc, MemstoreError):
        for cls, name, code in _BUILTIN:
            if isinstance(exc, cls):
                status = code
                body["error"]["type"] = name
                break
        body["error"].setdefault("hint", "")
        body["error"].setdefault("fields", {})
    return status, body


def retry_headers(body: dict[str, Any]) -> dict[str, str]:
    """`Retry-After` for an error that says when to retry (`fields.retry_after`, seconds).

    >>> retry_headers({"error": {"fields": {"retry_after": 1}}})
    {'Retry-After': '1'}
    """
    after = ((body.get("error") or {}).get("fields") or {}).get("retry_after")
    return {"Retry-After": str(int(after))} if isinstance(after, (int, float)) and after >= 0 else {}


def _body(status: int, type_: str, message: str, hint: str = "", **fields: Any) -> dict[str, Any]:
    return {"error": {"type": type_, "message": message, "hint": hint, "fields": fields}, "detail": message}


def _identity_loc(loc: Any) -> bool:
    """Does a validation error's location end at an identity argument (user_id / agent_id / run_id)?"""
    from memstore.core.scope_rule import IDENTITY_KEYS

    names = [p for p in loc if isinstance(p, str)]
    return bool(names) and names[-1] in IDENTITY_KEYS


def _allowed(app: FastAPI, request: Request) -> list[str]:
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match != Match.NONE and getattr(route, "methods", None):
            methods |= set(route.methods)
    return sorted(methods)


def install_error_envelope(app: FastAPI, base: Callable[[BaseException], tuple[int, dict[str, Any]]]) -> None:
    """Answer every error with the one envelope (library errors, FastAPI's request validation,
    404 / 405 from routing)."""

    async def on_error(request: Request, exc: Exception) -> JSONResponse:
        status, body = envelope(exc, base)
        return JSONResponse(body, status_code=status, headers=retry_headers(body))

    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        problems = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in errors][:10]
        message = "the request does not match the API: " + "; ".join(problems)
        if errors and all(_identity_loc(e.get("loc", ())) for e in errors):
            # a user_id / agent_id / run_id the one scope rule refuses: the library's answer (core/scope_rule.py)
            return JSONResponse(_body(400, "IdentityError", message, "ids are non-blank plain text of at most "
                                      "200 characters, without control characters"), status_code=400)
        return JSONResponse(_body(422, "InvalidInputError", message, "see /docs for the request's schema"),
                            status_code=422)

    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        message = str(exc.detail)
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(_allowed(app, request))
            message = f"{request.method} is not allowed on {request.url.path}; allowed: {headers['Allow']}"
        elif exc.status_code == 404:
            message = f"no route {request.url.path}: see /docs for the API"
        return JSONResponse(_body(exc.status_code, _HTTP_TYPES.get(exc.status_code, "ServerError"), message),
                            status_code=exc.status_code, headers=headers)

    for cls in (Exception, MemstoreError, TypeError, ValueError, KeyError, FileNotFoundError, PermissionError):
        app.add_exception_handler(cls, on_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
