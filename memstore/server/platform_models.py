"""Request bodies and parameters of the mem0 platform routes (memstore/server/platform_routes.py), as
the platform SDKs send them: the fields memstore reads are typed and checked; the SDKs' other fields
(output_format, version, org_id, project_id, async_mode...) are accepted and ignored."""
from __future__ import annotations

from typing import Annotated, Any, Optional

from fastapi import Path as PathParam
from fastapi import Query as QueryParam
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memstore.core.scope_rule import IDENTITY_PATTERN, MAX_ID_CHARS
from memstore.server.openapi_rules import ID_PATTERN, NAME_PATTERN, Identity, valid_unicode

MAX_BATCH = 1000


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")       # the SDKs' other fields (output_format, version, org_id...)

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        return valid_unicode(data)


Ident = Optional[Identity]           # the one scope rule's pattern (core/scope_rule.py)
Filters = Optional[dict[str, Any]]


class PlatformMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Annotated[str, Field(min_length=1, max_length=100)]
    content: Annotated[str, Field(pattern=NAME_PATTERN)] | dict[str, Any] | list[Any]


class PlatformAdd(_Body):
    messages: Annotated[list[PlatformMessage], Field(min_length=1)] | Annotated[str, Field(pattern=NAME_PATTERN)] = \
        Field(..., description="The conversation to remember (a string is one user message).")
    user_id: Ident = None
    agent_id: Ident = None
    run_id: Ident = None
    app_id: Ident = Field(None, description="Kept as the metadata key app_id.")
    filters: Filters = Field(None, description="Identity as filters ({\"user_id\": ...}), as SDK options send it.")
    metadata: dict[str, Any] | None = None
    infer: bool | None = None
    timestamp: Annotated[int, Field(ge=0, le=4102444800)] | None = Field(
        None, description="When the conversation happened (epoch seconds).")
    expiration_date: str | None = None
    async_mode: bool | None = Field(None, description="Accepted: memstore answers once the add is committed.")


class ScopedRead(_Body):
    user_id: Ident = Field(None, description="SDKs before v3: the identity at the top level (ANDed with filters).")
    agent_id: Ident = None
    run_id: Ident = None
    app_id: Ident = None
    filters: Filters = None
    output_format: Annotated[str, Field(pattern=r"^v1\.[01]$")] | None = Field(
        None, description="v1.0: a bare list; v1.1: {\"results\": [...]} (the default on /v3/ paths).")


class PlatformList(ScopedRead):
    show_expired: bool | None = None


class PlatformSearch(ScopedRead):
    query: Annotated[str, Field(pattern=NAME_PATTERN, max_length=10_000)]
    top_k: Annotated[int, Field(ge=1, le=1000)] | None = None
    threshold: Annotated[float, Field(ge=0, le=1)] | None = None
    metadata: dict[str, Any] | None = Field(None, description="Metadata that results must carry (ANDed).")
    categories: list[str] | None = Field(None, description="Values of the metadata key categories (ANDed).")
    show_expired: bool | None = None


class PlatformUpdate(_Body):
    text: Annotated[str, Field(pattern=NAME_PATTERN)] | None = None
    metadata: dict[str, Any] | None = None
    expiration_date: str | None = None
    timestamp: Any | None = Field(None, description="Refused: memstore keeps when a memory was written.")


class BatchItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    memory_id: Annotated[str, Field(pattern=ID_PATTERN, max_length=200)]
    text: Annotated[str, Field(pattern=NAME_PATTERN)] | None = None
    metadata: dict[str, Any] | None = None


class PlatformBatch(_Body):
    memories: Annotated[list[BatchItem], Field(min_length=1, max_length=MAX_BATCH)]


MemoryIdPath = Annotated[str, PathParam(pattern=ID_PATTERN, max_length=200)]
IdentityQuery = Annotated[str | None, QueryParam(pattern=IDENTITY_PATTERN, max_length=MAX_ID_CHARS)]
PageQuery = Annotated[int | None, QueryParam(ge=1, le=100_000)]
PageSizeQuery = Annotated[int | None, QueryParam(ge=1, le=1000)]
EntityType = Annotated[str, PathParam(pattern=r"^(user|agent|run|app)$")]
EntityName = Annotated[str, PathParam(pattern=NAME_PATTERN, max_length=200)]
