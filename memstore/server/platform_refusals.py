"""The mem0 platform features memstore does not have, answered as such: each path the SDKs call for
them answers 501 with the error type NotSupportedError naming the feature (the SDKs raise it as
their MemoryError with memstore's message), never a 404 page or a 500."""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI
from fastapi import Path as PathParam
from fastapi.responses import Response

from memstore.core.errors import NotSupportedError
from memstore.server.openapi_rules import NAME_PATTERN

UNSUPPORTED_TAG = "mem0 platform: not supported"


def not_supported(feature: str) -> NotSupportedError:
    """The one answer for a platform feature memstore does not have."""
    return NotSupportedError(f"{feature} is a mem0 platform feature that memstore does not support",
                             hint="see \"Moving from mem0\" in memstore's README for what the platform SDKs can do "
                                  "against memstore", feature=feature)


# (method, path, feature) of the platform features memstore answers as not supported
UNSUPPORTED = (
    ("GET", "/api/v1/orgs/organizations/{org_id}/projects/", "organisations and projects"),
    ("POST", "/api/v1/orgs/organizations/{org_id}/projects/", "organisations and projects"),
    ("GET", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/", "organisations and projects"),
    ("PATCH", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/", "project settings (custom instructions "
                                                                            "and categories)"),
    ("DELETE", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/", "organisations and projects"),
    ("GET", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/members/", "project members"),
    ("POST", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/members/", "project members"),
    ("PUT", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/members/", "project members"),
    ("DELETE", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/members/", "project members"),
    ("GET", "/api/v1/webhooks/projects/{project_id}/", "webhooks"),
    ("POST", "/api/v1/webhooks/projects/{project_id}/", "webhooks"),
    ("PUT", "/api/v1/webhooks/{webhook_id}/", "webhooks"),
    ("DELETE", "/api/v1/webhooks/{webhook_id}/", "webhooks"),
    ("POST", "/v1/exports/", "memory exports"),
    ("POST", "/v1/exports/get/", "memory exports"),
    ("POST", "/v1/summary/", "summaries"),
    ("POST", "/v1/feedback/", "feedback"),
    ("GET", "/v1/event/{event_id}/", "add events (memstore commits an add before answering: its answer holds "
                                     "the memories)"),
    ("GET", "/v2/entities/user/{entity_id}/profile/", "user profiles"),
    ("POST", "/v2/profiles/jobs/", "user profiles"),
    ("GET", "/v2/profiles/jobs/{job_id}/", "user profiles"),
    ("GET", "/v2/profiles/settings/", "user profiles"),
    ("POST", "/v2/profiles/settings/", "user profiles"),
)


def mount_unsupported(app: FastAPI, auth: list) -> None:
    for method, path, feature in UNSUPPORTED:
        app.add_api_route(path, _refusal(path, feature), methods=[method], dependencies=auth, tags=[UNSUPPORTED_TAG],
                          name="unsupported " + method + " " + path,
                          summary=f"Not supported by memstore: {feature.split(' (')[0]} (mem0 platform)",
                          description="Answers 501 NotSupportedError.")


def _refusal(path: str, feature: str) -> Callable[..., Response]:
    """An endpoint that takes `path`'s parameters and refuses `feature`."""
    def endpoint(**_: Any) -> Response:
        raise not_supported(feature)

    names = re.findall(r"{([a-z_]+)}", path)
    endpoint.__signature__ = inspect.Signature([    # type: ignore[attr-defined]
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY,
                          annotation=Annotated[str, PathParam(pattern=NAME_PATTERN, max_length=200)]) for n in names])
    return endpoint
