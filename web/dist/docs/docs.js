// The interactive reference: Swagger UI over the served OpenAPI document.
// The key a person enters in Authorize stays in this page's memory.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    displayRequestDuration: true,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
