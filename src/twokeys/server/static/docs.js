// The API docs: Swagger UI from this server's own assets (no CDN). With an API key the
// page asks for it and sends it with every request: the schema's and the tries'.
(function () {
  "use strict";
  function start(key) {
    window.ui = SwaggerUIBundle({
      url: "openapi.json",  // relative: a collection's docs read its own schema
      dom_id: "#swagger-ui",
      deepLinking: true,
      requestInterceptor: function (request) {
        if (key && !request.headers.Authorization) {
          request.headers.Authorization = "Bearer " + key;
        }
        return request;
      },
    });
  }
  var form = document.getElementById("key");
  if (document.body.dataset.keyed !== "true") {
    start("");
    return;
  }
  form.hidden = false;
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var key = document.getElementById("key-input").value.trim();
    form.hidden = true;
    start(key);
  });
})();
