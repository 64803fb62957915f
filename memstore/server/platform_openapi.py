"""The mem0 platform routes in the OpenAPI document: their filter language, request rules and
answers (memstore/server/platform_routes.py), so schemathesis (tests/test_openapi_fuzz.py) checks
them as it checks memstore's own routes. The features memstore does not have document their 501."""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from memstore.server.openapi_rules import ID_PATTERN, NAME_PATTERN, TIME_PATTERN
from memstore.server.platform_shapes import FIELDS

_IDENT = {"$ref": "#/components/schemas/IdentityValue"}
_SCALAR = {"type": ["string", "number", "boolean", "null"]}
_OPERATOR = {"type": "object", "minProperties": 1, "additionalProperties": False,
             "properties": {**{op: _SCALAR for op in ("eq", "ne", "gt", "gte", "lt", "lte", "contains", "icontains")},
                            "in": {"type": "array", "items": {"type": ["string", "number", "null"]}}}}
_TIME = {"anyOf": [{"type": "string", "pattern": TIME_PATTERN},
                   {"type": "integer", "minimum": 0, "maximum": 4_102_444_800}]}
_TIME_COND = {"anyOf": [_TIME, {"type": "object", "minProperties": 1, "additionalProperties": False,
                                "properties": {op: _TIME for op in ("eq", "ne", "gt", "gte", "lt", "lte")}}]}
_IDENT_COND = {"anyOf": [_IDENT, {"type": "object", "minProperties": 1, "additionalProperties": False,
                                  "properties": {"eq": _IDENT, "ne": _IDENT,
                                                 "in": {"type": "array", "items": _IDENT}}}]}
_PLATFORM_FIELDS = sorted(set(FIELDS) | {"metadata", "AND", "OR", "NOT", "user_id", "agent_id", "run_id"})
_METADATA_KEY = {"pattern": "^[^@$]", "not": {"enum": _PLATFORM_FIELDS}}
_REF = {"$ref": "#/components/schemas/PlatformFilters"}

COMPONENTS: dict[str, Any] = {
    "PlatformFilters": {
        "type": "object", "minProperties": 1,
        "description": "The mem0 platform's filters: AND / OR lists, NOT, entity ids (\"*\": any non-null), "
                       "created_at / updated_at / timestamp with gt gte lt lte, keywords (contains / icontains "
                       "on the text), memory_ids, metadata {key: value}; other keys are metadata keys.",
        "propertyNames": {"pattern": "^[^@$]"},
        "properties": {
            "AND": {"type": "array", "minItems": 1, "items": _REF},
            "OR": {"type": "array", "minItems": 1, "items": _REF},
            "NOT": {"anyOf": [_REF, {"type": "array", "minItems": 1, "items": _REF}]},
            **{k: {"anyOf": [_IDENT_COND, {"const": "*"}]} for k in ("user_id", "agent_id", "run_id")},
            **{k: _TIME_COND for k in ("created_at", "updated_at", "timestamp")},
            "keywords": {"type": "object", "minProperties": 1, "additionalProperties": False,
                         "properties": {"contains": {"type": "string"}, "icontains": {"type": "string"}}},
            "memory_ids": {"type": "array", "items": {"type": "string", "pattern": ID_PATTERN}},
            "metadata": {"type": "object", "minProperties": 1, "propertyNames": _METADATA_KEY,
                         "additionalProperties": {"anyOf": [_SCALAR, _OPERATOR]}},
        },
        "additionalProperties": {"anyOf": [_SCALAR, _OPERATOR]}},
    "PlatformMemory": {"type": "object", "required": ["id", "memory"], "properties": {
        "id": {"type": "string"}, "memory": {"type": "string"}, "user_id": {"type": ["string", "null"]},
        "agent_id": {"type": ["string", "null"]}, "run_id": {"type": ["string", "null"]},
        "app_id": {"type": ["string", "null"]}, "metadata": {"type": ["object", "null"]},
        "categories": {"type": "array"}, "created_at": {"type": ["string", "null"]},
        "updated_at": {"type": ["string", "null"]}, "score": {"type": "number"}}},
    "PlatformHistoryEntry": {"type": "object", "required": ["memory_id", "event"], "properties": {
        "memory_id": {"type": "string"}, "event": {"type": "string"}, "old_memory": {"type": ["string", "null"]},
        "new_memory": {"type": ["string", "null"]}}},
}
_MEM = {"$ref": "#/components/schemas/PlatformMemory"}
_MESSAGE = {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}
_ADDED = {"type": "array", "items": {"type": "object", "required": ["id", "memory", "event"]}}
_RESULTS = {"type": "object", "required": ["results"], "properties": {"results": {"type": "array", "items": _MEM}}}
_PAGE = {"type": "object", "required": ["count", "results", "next", "previous"],
         "properties": {"count": {"type": "integer"}, "results": {"type": "array", "items": _MEM}}}
RESPONSES: dict[str, dict[str, Any]] = {
    "GET /v1/ping/": {"type": "object", "required": ["status", "org_id", "project_id"]},
    "POST /v1/memories/": {"anyOf": [{"type": "object", "required": ["results"],
                                      "properties": {"results": _ADDED}}, _ADDED]},
    "POST /v3/memories/add/": {"anyOf": [{"type": "object", "required": ["results"],
                                          "properties": {"results": _ADDED}}, _ADDED]},
    "POST /v3/memories/": _PAGE,
    "POST /v2/memories/": {"anyOf": [_PAGE, _RESULTS, {"type": "array", "items": _MEM}]},
    "GET /v1/memories/": {"anyOf": [_PAGE, _RESULTS, {"type": "array", "items": _MEM}]},
    "POST /v3/memories/search/": {"anyOf": [_RESULTS, {"type": "array", "items": _MEM}]},
    "POST /v2/memories/search/": {"anyOf": [_RESULTS, {"type": "array", "items": _MEM}]},
    "POST /v1/memories/search/": {"anyOf": [_RESULTS, {"type": "array", "items": _MEM}]},
    "GET /v1/memories/{memory_id}/": _MEM, "PUT /v1/memories/{memory_id}/": _MEM,
    "DELETE /v1/memories/{memory_id}/": _MESSAGE, "DELETE /v1/memories/": _MESSAGE,
    "GET /v1/memories/{memory_id}/history/": {"type": "array",
                                              "items": {"$ref": "#/components/schemas/PlatformHistoryEntry"}},
    "GET /v1/entities/": {"type": "object", "required": ["count", "results"], "properties": {"results": {
        "type": "array", "items": {"type": "object", "required": ["name", "type", "total_memories"]}}}},
    "DELETE /v2/entities/{entity_type}/{entity_name}/": _MESSAGE,
    "DELETE /v1/entities/{entity_type}/{entity_name}/": _MESSAGE,
    "PUT /v1/batch/": _MESSAGE, "DELETE /v1/batch/": _MESSAGE,
}
# operations that refuse some of their options as not supported (501): documented
PARTLY = ("POST /v3/memories/add/", "POST /v1/memories/", "PUT /v1/memories/{memory_id}/", "DELETE /v1/memories/{memory_id}/",
          "DELETE /v1/memories/", "DELETE /v2/entities/{entity_type}/{entity_name}/",
          "DELETE /v1/entities/{entity_type}/{entity_name}/")
_PART = {"type": "object", "required": ["type"], "properties": {"type": {"type": "string", "minLength": 1}},
         "description": 'A content part: {"type": "text", "text": ...} or {"type": "image_url", "image_url": {"url": ...}}'}
_ANY_IDENTITY = [{"required": [k], "properties": {k: _IDENT}} for k in ("user_id", "agent_id", "run_id")]


def _body_rules(schemas: dict[str, Any]) -> None:
    add = schemas.get("PlatformAdd", {})
    props = add.get("properties", {})
    props["filters"] = _REF
    props["metadata"] = {"$ref": "#/components/schemas/Metadata"}
    props["expiration_date"] = {"type": "string", "pattern": TIME_PATTERN}
    props["messages"] = {"anyOf": [
        {"type": "string", "pattern": NAME_PATTERN},
        {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["role", "content"], "properties": {
            "role": {"type": "string", "minLength": 1, "maxLength": 100},
            "content": {"anyOf": [{"type": "string", "pattern": NAME_PATTERN}, _PART,
                                  {"type": "array", "items": _PART}]}}}}]}
    add["anyOf"] = _ANY_IDENTITY + [{"required": ["filters"], "properties": {"filters": {"anyOf": _ANY_IDENTITY}}}]
    for name in ("PlatformList", "PlatformSearch"):
        p = schemas.get(name, {}).get("properties", {})
        p["filters"] = _REF
        if "metadata" in p:
            p["metadata"] = COMPONENTS["PlatformFilters"]["properties"]["metadata"]
    text = {"type": "string", "pattern": NAME_PATTERN}           # present means not null: a null is no change
    update = schemas.get("PlatformUpdate", {})
    update.setdefault("properties", {}).update(text=text, metadata={"$ref": "#/components/schemas/Metadata"},
                                               expiration_date={"type": "string", "pattern": TIME_PATTERN})
    update["anyOf"] = [{"required": [k]} for k in ("text", "metadata", "expiration_date")]
    item = schemas.get("BatchItem", {})
    item.setdefault("properties", {}).update(text=text, metadata={"$ref": "#/components/schemas/Metadata"})
    item["anyOf"] = [{"required": ["text"]}, {"required": ["metadata"]}]


def document_platform(app: FastAPI, unsupported: tuple) -> None:
    """Wrap `app.openapi` (already memstore's full document) with the platform routes' rules."""
    base = app.openapi
    refused = {f"{m} {p}" for m, p, _ in unsupported}

    def openapi() -> dict[str, Any]:
        doc = base()
        if doc.get("x-platform-documented"):
            return doc
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas.update(COMPONENTS)
        _body_rules(schemas)
        not_supported = {"description": "Not supported by memstore (NotSupportedError)",
                         "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
        for path, ops in doc.get("paths", {}).items():
            for method, op in ops.items():
                key = f"{method.upper()} {path}"
                if key in RESPONSES:
                    op["responses"]["200"]["content"] = {"application/json": {"schema": RESPONSES[key]}}
                if key in refused:
                    op["responses"] = {k: v for k, v in op["responses"].items() if k != "200"}
                    op["responses"]["501"] = not_supported
                elif key in PARTLY:
                    op["responses"]["501"] = not_supported
        doc["x-platform-documented"] = True
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
