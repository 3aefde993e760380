// Vigil's API page: Swagger UI over the service's OpenAPI document. The page is /docs, so the
// relative address resolves beside it, whatever the host (API Gateway, a custom domain, the
// local runtime) and any base path in front of it. No online validator: nothing leaves the origin.
"use strict";

SwaggerUIBundle({
  url: "openapi.json",
  dom_id: "#swagger-ui",
  validatorUrl: null,
});
