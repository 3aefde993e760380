"""The OpenAPI document of the REST mirror, generated from the same models as tools/list."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from vigil import __version__
from vigil.catalog import tools
from vigil.errors import ErrorCode
from vigil.kit.tooling import strict_schema


def _error_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message", "retryable"],
                "properties": {
                    "code": {"type": "string", "enum": [code.value for code in ErrorCode]},
                    "message": {"type": "string"},
                    "retryable": {"type": "boolean"},
                    "details": {"type": "object"},
                },
            }
        },
    }


def openapi_document() -> dict[str, Any]:
    catalog = tools()
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (tool.input_model, "validation") for tool in catalog
    ] + [(tool.output_model, "serialization") for tool in catalog]
    refs, definitions = models_json_schema(models, ref_template="#/components/schemas/{model}")
    schemas: dict[str, Any] = dict(definitions.get("$defs", {}))
    for tool in catalog:
        schemas[tool.input_model.__name__] = strict_schema(schemas[tool.input_model.__name__])
    schemas["Error"] = _error_schema()
    error_response = {
        "description": "A typed error; the code is stable, the message is for people.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    paths: dict[str, Any] = {}
    for tool in catalog:
        paths[f"/v1/{tool.name}"] = {
            "post": {
                "operationId": tool.name,
                "summary": tool.title,
                "description": f"{tool.description} {tool.callers}".rstrip(),
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": refs[(tool.input_model, "validation")]}
                    },
                },
                "responses": {
                    "200": {
                        "description": "The tool's result.",
                        "content": {
                            "application/json": {
                                "schema": refs[(tool.output_model, "serialization")]
                            }
                        },
                    },
                    **{
                        str(status): error_response
                        for status in (400, 401, 403, 404, 409, 413, 422, 429, 503)
                    },
                },
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Vigil",
            "version": __version__,
            "description": "REST mirror of the Vigil MCP tools: POST the tool's arguments as JSON.",
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }
