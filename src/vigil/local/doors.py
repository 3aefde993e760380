"""The two front doors a deploy may open (the template's FrontDoor parameter), as the local
server plays them. Behind an HTTP API only the routes that the template declares reach the
function: the route table is read from the translated template, so a route added to
``template.yaml`` is served locally without a change here, and a route missing from it fails
here first. Behind a Function URL every request reaches the function, and its event names no
route and carries no path parameters, as Lambda's does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from vigil.local.deployment import LocalDeployment
from vigil.local.resolver import Resolver

LOCAL_API_ID = "local"

_ANY_METHOD = "x-amazon-apigateway-any-method"
_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch"})
_DEFAULT_ROUTE = "$default"


@dataclass(frozen=True)
class Route:
    method: str  # upper case, or ANY
    path: str  # with {param} and {greedy+} segments, or $default

    @property
    def key(self) -> str:
        return _DEFAULT_ROUTE if self.path == _DEFAULT_ROUTE else f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """Path parameters if this route takes the request, else None."""
        if self.path == _DEFAULT_ROUTE:
            return {}
        if self.method not in ("ANY", method):
            return None
        pattern = self.path.strip("/").split("/")
        segments = path.strip("/").split("/")
        parameters: dict[str, str] = {}
        for index, part in enumerate(pattern):
            greedy = re.fullmatch(r"\{(\w+)\+\}", part)
            if greedy:
                rest = segments[index:]
                if not rest or rest == [""]:
                    return None
                parameters[greedy.group(1)] = unquote("/".join(rest))
                return parameters
            if index >= len(segments):
                return None
            variable = re.fullmatch(r"\{(\w+)\}", part)
            if variable:
                if not segments[index]:
                    return None
                parameters[variable.group(1)] = unquote(segments[index])
            elif part != segments[index]:
                return None
        return parameters if len(segments) == len(pattern) else None

    def specificity(self) -> tuple[int, int, int]:
        """API Gateway prefers literal segments, then parameters, then greedy; then a method."""
        if self.path == _DEFAULT_ROUTE:
            return (-1, 0, 0)
        parts = self.path.strip("/").split("/")
        literal = sum(1 for p in parts if not p.startswith("{"))
        greedy = any(p.endswith("+}") for p in parts)
        return (literal, 0 if greedy else 1, 0 if self.method == "ANY" else 1)


def http_routes(cfn: Mapping[str, Any]) -> list[Route]:
    """The routes of every HTTP API in a translated template."""
    routes: list[Route] = []
    for resource in (cfn.get("Resources") or {}).values():
        kind = resource.get("Type")
        properties = resource.get("Properties") or {}
        if kind == "AWS::ApiGatewayV2::Api" and isinstance(properties.get("Body"), dict):
            for path, operations in (properties["Body"].get("paths") or {}).items():
                if path == f"/{_DEFAULT_ROUTE}":
                    # In an OpenAPI body, API Gateway's catch-all route is the path /$default.
                    routes.append(Route("ANY", _DEFAULT_ROUTE))
                    continue
                for operation in operations:
                    if operation == _ANY_METHOD:
                        routes.append(Route("ANY", path))
                    elif operation.lower() in _HTTP_METHODS:
                        routes.append(Route(operation.upper(), path))
        elif kind == "AWS::ApiGatewayV2::Route" and isinstance(properties.get("RouteKey"), str):
            route_key = properties["RouteKey"]
            if route_key == _DEFAULT_ROUTE:
                routes.append(Route("ANY", _DEFAULT_ROUTE))
            else:
                method, _, path = route_key.partition(" ")
                routes.append(Route(method.upper(), path))
    return sorted(set(routes), key=lambda r: r.key)


@dataclass(frozen=True)
class HttpApiDoor:
    """An HTTP API: a request reaches the function through the most specific of its routes,
    or API Gateway answers 404 itself."""

    routes: tuple[Route, ...]
    api_id: str = LOCAL_API_ID
    request_id_header = "apigw-requestid"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "routes", tuple(sorted(self.routes, key=Route.specificity, reverse=True))
        )

    def route(self, method: str, path: str) -> tuple[str, dict[str, str]] | None:
        """The route key and path parameters of the route that takes the request, if any."""
        for route in self.routes:
            parameters = route.match(method, path)
            if parameters is not None:
                return route.key, parameters
        return None


@dataclass(frozen=True)
class FunctionUrlDoor:
    """A Lambda Function URL: every request reaches the function, as route ``$default``."""

    url_id: str
    request_id_header = "x-amzn-requestid"

    @property
    def api_id(self) -> str:
        return self.url_id

    def route(self, method: str, path: str) -> tuple[str, dict[str, str]]:
        return _DEFAULT_ROUTE, {}


FrontDoor = HttpApiDoor | FunctionUrlDoor


def front_door(cfn: Mapping[str, Any], deployment: LocalDeployment) -> FrontDoor:
    """The door a deploy of ``cfn`` with the deployment's parameter values opens: its
    Function URL when it has one, else its HTTP APIs' routes."""
    if deployment.function_urls:
        (url,) = deployment.function_urls.values()
        return FunctionUrlDoor((urlsplit(url).hostname or "").split(".")[0])
    present = Resolver(cfn, deployment.names).present()
    return HttpApiDoor(tuple(http_routes({"Resources": present})))
