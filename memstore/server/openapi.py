"""The server's OpenAPI document, complete enough for generated clients and fuzzers: a typed
request model for every `/v1/<method>` (its keyword arguments, from `Memory`'s signature), every
error status with the one error envelope (memstore/server/errors.py), the content type each
answer really has (JSON, or an Arrow IPC stream for frames), and ids / identities / limits with the
constraints the library checks.

>>> from memstore.api.protocol import METHODS
>>> model = call_model(METHODS["get_all"])
>>> sorted(model.model_fields)[:3], model.model_config["extra"]
(['agent_id', 'as_of', 'filters'], 'forbid')
>>> call_arguments(METHODS["get"], {"args": ["m1"], "kwargs": {"user_id": "alice"}})
{'memory_id': 'm1', 'user_id': 'alice'}
>>> call_arguments(METHODS["get_all"], {"kwargs": {"user_id": "alice", "top_k": 5.0}})     # 5.0 is an integer
{'user_id': 'alice', 'top_k': 5}
"""
from __future__ import annotations

import inspect
import typing
from functools import cache
from typing import Any, Optional

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from memstore.api.protocol import METHODS, MethodSpec
from memstore.core.errors import ArgumentError, IdentityError
from memstore.core.scope_rule import IDENTITY_KEYS
from memstore.server.errors import ErrorBody
from memstore.server.openapi_rules import (
    COMPONENTS,
    FILTER_ARGUMENTS,
    ID_PATTERN,
    NAME_PATTERN,
    UPLOAD_BODY,
    MemoryUpdate,
    argument_type,
    request_rules,
    response_schema,
)
from memstore.wire.format import ARROW_STREAM

ERROR_STATUSES = {400: "Bad input: the message names the argument and what to do", 401: "Missing or wrong bearer token",
                  403: "Not allowed for this token or scope", 404: "No such memory, store, file or route",
                  405: "Method not allowed (see Allow)",
                  413: "Over a request limit (RequestTooLargeError: `fields.limit` names the config key, "
                       "`fields.allowed` its value, `fields.got` what was sent): see the document's description",
                  409: "Conflict: a name or directory taken, two values for one key, a read-only or busy store "
                       "(StoreBusyError: retry)",
                  422: "The request does not match this schema", 423: "The store is locked by another process",
                  500: "A write failed and was rolled back", 502: "The LLM answered wrongly",
                  503: "The LLM or the store is unavailable: retry"}


def _memory_method(name: str) -> Any:
    from memstore.memory import Memory

    return getattr(Memory, name)


@cache
def _params(spec: MethodSpec) -> tuple[inspect.Parameter, ...]:
    """The method's parameters, once per method (inspect.signature cost ~0.1 ms a request)."""
    sig = inspect.signature(_memory_method(spec.name))
    return tuple(p for p in sig.parameters.values() if p.name != "self"
                 and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD))


def _hints(spec: MethodSpec) -> dict[str, Any]:
    try:
        return typing.get_type_hints(_memory_method(spec.name))
    except Exception:
        return {}


def _json_type(hint: Any) -> Any:
    """A hint a JSON body can carry (os.PathLike, frames, tuples -> their JSON form)."""
    text = repr(hint)
    if any(t in text for t in ("PathLike", "DataFrame", "Callable", "datetime", "Iterable")):
        return Any
    if "tuple" in text.lower():
        return Optional[list[str]]
    return hint


@cache
def call_model(spec: MethodSpec) -> type[BaseModel]:
    """The keyword arguments of `Memory.<method>` as a pydantic model (unknown keys refused): each
    argument's type from memstore/server/openapi_rules.py, else from the signature."""
    hints = _hints(spec)
    fields: dict[str, Any] = {}
    for p in _params(spec):
        required = p.default is inspect.Parameter.empty
        default = ... if required else (p.default if isinstance(p.default, (str, int, float, bool, type(None)))
                                        else list(p.default) if isinstance(p.default, tuple) else None)
        hint = argument_type(spec.name, p.name, p.default)
        if hint is None:
            hint = _json_type(hints.get(p.name, Any))
        fields[p.name] = (hint, default)
    config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re", arbitrary_types_allowed=True)
    return create_model(f"{spec.name}_arguments", __config__=config, **fields)


def call_arguments(spec: MethodSpec, body: Any) -> dict[str, Any]:
    """A `/v1/<method>` body `{"args": [...], "kwargs": {...}}` checked against the method's
    arguments; the keyword arguments to call it with (positional ones bound to their names)."""
    if not isinstance(body, dict) or set(body) - {"args", "kwargs"}:
        raise ArgumentError(f"{spec.name}(): the body must be {{\"kwargs\": {{...}}}} (and optionally \"args\": [...])",
                            hint=f"see POST /v1/{spec.name} in /docs")
    args, kwargs = body.get("args", []), body.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ArgumentError(f"{spec.name}(): \"args\" must be a list and \"kwargs\" an object",
                            hint=f"see POST /v1/{spec.name} in /docs")
    names = [p.name for p in _params(spec)]
    if len(args) > len(names):
        raise ArgumentError(f"{spec.name}() takes at most {len(names)} arguments, got {len(args)}",
                            hint=f"pass them by name in \"kwargs\": {', '.join(names)}")
    kwargs = dict(kwargs)
    for name, value in zip(names, args):
        if name in kwargs:
            raise ArgumentError(f"{spec.name}() got {name!r} twice (in args and kwargs)", argument=name)
        kwargs[name] = value
    try:
        checked = call_model(spec).model_validate(kwargs)
    except ValidationError as exc:
        problems = []
        for e in exc.errors()[:10]:
            where = ".".join(str(p) for p in e.get("loc", ()))
            problems.append(f"{where}: unknown argument" if e.get("type") == "extra_forbidden"
                            else f"{where}: {e.get('msg')}")
        if all(_identity_error(e) for e in exc.errors()):     # the one scope rule's answer (core/scope_rule.py)
            raise IdentityError(f"{spec.name}(): {'; '.join(problems)}", hint="ids are non-blank plain text of at "
                                "most 200 characters, without control characters") from None
        raise ArgumentError(f"{spec.name}(): {'; '.join(problems)}",
                            hint=f"{spec.name}() takes: {', '.join(names)}", arguments=", ".join(names)) from None
    return checked.model_dump(include=set(kwargs), exclude_unset=True)     # as checked: 85.0 -> 85


def _identity_error(error: dict[str, Any]) -> bool:
    """A validation error about the value of user_id / agent_id / run_id (not an unknown argument)."""
    loc = [p for p in error.get("loc", ()) if isinstance(p, str)]
    return error.get("type") != "extra_forbidden" and bool(loc) and loc[-1] in IDENTITY_KEYS


def as_call(spec: MethodSpec, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Checked arguments back into (positional, keyword) as `Memory.<method>` declares them, so a
    wrapper whose own parameters share a name with the method's (e.g. `name`) still gets them right.

    >>> as_call(METHODS["get"], {"memory_id": "m1", "user_id": "alice"})
    (['m1'], {'user_id': 'alice'})
    """
    kwargs = dict(kwargs)
    args: list[Any] = []
    for p in _params(spec):
        if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD or p.name not in kwargs:
            break
        args.append(kwargs.pop(p.name))
    return args, kwargs


def _errors(extra: dict[int, str] | None = None) -> dict[str, Any]:
    ref = {"$ref": "#/components/schemas/ErrorBody"}
    return {str(code): {"description": text, "content": {"application/json": {"schema": ref}}}
            for code, text in {**ERROR_STATUSES, **(extra or {})}.items()}


def document_api(app: FastAPI) -> None:
    """Replace `app.openapi` with the complete document (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas.update({k: v for k, v in ErrorBody.model_json_schema(
            ref_template="#/components/schemas/{model}").pop("$defs", {}).items()})
        schemas["ErrorBody"] = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas["ErrorBody"].pop("$defs", None)
        schemas.update(COMPONENTS)
        schemas["MemoryUpdate"] = MemoryUpdate.model_json_schema(ref_template="#/components/schemas/{model}")
        for path, ops in doc.get("paths", {}).items():
            for method, op in ops.items():
                _document_operation(path, method, op, schemas)
        _document_limits(doc, getattr(app.state, "limits", None))
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


def _document_operation(path: str, method: str, op: dict[str, Any], schemas: dict[str, Any]) -> None:
    responses = op.setdefault("responses", {})
    name = path.rsplit("/", 1)[-1] if path.startswith("/v1/") else None
    ok = responses.setdefault("200", {"description": "Success"})
    ok["content"] = {"application/json": {"schema": response_schema(method, path, name)}}
    if path == "/health":
        return
    responses.update(_errors())
    for param in op.get("parameters", []):
        if param.get("name") == "memory_id":
            param["schema"] = {"type": "string", "pattern": ID_PATTERN, "maxLength": 200}
    if name in METHODS:
        spec = METHODS[name]
        model = call_model(spec)
        kw = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(kw.pop("$defs", {}))
        for arg, component in FILTER_ARGUMENTS.items():
            if arg in kw.get("properties", {}):
                kw["properties"][arg] = {"anyOf": [{"$ref": f"#/components/schemas/{component}"}, {"type": "null"}],
                                         "default": None}
        rules = request_rules(spec.name)
        kw.update(rules)
        schemas[model.__name__] = kw
        needs_kwargs = bool(kw.get("required") or rules.get("anyOf"))
        body = {"type": "object", "additionalProperties": False,
                "properties": {"kwargs": {"$ref": f"#/components/schemas/{model.__name__}"},
                               "args": {"type": "array", "maxItems": 0,
                                        "description": "Positional arguments (deprecated: pass them in kwargs)."}},
                "required": ["kwargs"] if needs_kwargs else []}
        op["requestBody"] = {"required": needs_kwargs, "content": {"application/json": {"schema": body}}}
        if spec.returns == "frame":
            ok["content"] = {ARROW_STREAM: {"schema": {"type": "string", "format": "binary"}}}
            ok["description"] = "The frame as an Apache Arrow IPC stream"
    if path == "/memories/{memory_id}" and method == "put":
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {"oneOf": [
            {"type": "string", "pattern": NAME_PATTERN, "description": "The new text."},
            {"$ref": "#/components/schemas/MemoryUpdate"}]}}}}
    if path == "/v1/ingest_upload":
        op["requestBody"] = UPLOAD_BODY
    for model in ("MemoryCreate", "SearchRequest", "MemoryUpdate"):
        props = schemas.get(model, {}).get("properties", {})
        for arg, component in FILTER_ARGUMENTS.items():
            if arg in props:
                props[arg] = {"anyOf": [{"$ref": f"#/components/schemas/{component}"}, {"type": "null"}],
                              "default": None}


def _document_limits(doc: dict[str, Any], limits: Any) -> None:
    """The server's request limits (config key `limits`, `serve --max-body`): in the description,
    as `x-memstore-limits`, on each route's 413 and in the mem0 add's schema; forget's 202."""
    if limits is None:
        return
    values = {k: getattr(limits, k) for k in ("max_body_bytes", "max_upload_bytes", "max_messages",
                                               "max_message_chars", "max_metadata_bytes")}
    doc["x-memstore-limits"] = values
    doc["info"]["description"] = (doc["info"].get("description", "") + "\n\n**Limits** (config key `limits`, "
                                  "`memstore serve --max-body`; over one: 413 naming it): request body "
                                  f"{values['max_body_bytes']:,} bytes (`POST /v1/ingest_upload`: "
                                  f"{values['max_upload_bytes']:,}); per add {values['max_messages']:,} messages of "
                                  f"at most {values['max_message_chars']:,} characters and metadata of at most "
                                  f"{values['max_metadata_bytes']:,} bytes as JSON.")
    for path, ops in doc.get("paths", {}).items():
        for op in ops.values():
            too_large = op.get("responses", {}).get("413")
            if too_large is None:
                continue
            key = "max_upload_bytes" if path == "/v1/ingest_upload" else "max_body_bytes"
            text = f"Over a limit: a body over {values[key]:,} bytes (limits.{key})"
            if path in ("/memories", "/v1/add"):
                text += (f", more than {values['max_messages']:,} messages, a message over "
                         f"{values['max_message_chars']:,} characters or metadata over "
                         f"{values['max_metadata_bytes']:,} bytes")
            too_large["description"] = text + ". The body names the limit (`fields.limit`)."
    forget = doc.get("paths", {}).get("/v1/forget", {}).get("post")
    if forget is not None:
        forget["responses"]["202"] = {
            "description": "Accepted, not done: the scope's rows are gone but the erasure is not finished or not "
                           "proven everywhere (`verified: false`; `pending` lists each part and why: a downstream "
                           "copy not reached, the file rewrite to retry). The next forget, scrub, doctor --repair or "
                           "open of the store finishes it. With a failed rewrite the body is the error envelope "
                           "(ErasureIncompleteError) plus `receipt`.",
            "content": {"application/json": {"schema": {"type": "object"}}}}
    create = doc.get("components", {}).get("schemas", {}).get("MemoryCreate", {}).get("properties", {})
    if "messages" in create:
        create["messages"]["maxItems"] = values["max_messages"]
