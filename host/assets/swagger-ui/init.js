// Starts Swagger UI on tradehost's OpenAPI document (loaded by /api/docs; no inline script, so a
// strict Content-Security-Policy works).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/api/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    // Tags start collapsed: this Swagger UI stops rendering an expanded list of this many
    // operations part-way (after the first few), and a list of tags reads better anyway.
    docExpansion: "none",
    persistAuthorization: true,
    tryItOutEnabled: true,
    validatorUrl: null,
  });
});
