// Starts Swagger UI on tradehost's OpenAPI document (loaded by /api/docs; no inline script, so a
// strict Content-Security-Policy works).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/api/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: true,
    tryItOutEnabled: true,
    validatorUrl: null,
  });
});
