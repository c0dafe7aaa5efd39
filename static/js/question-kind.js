// The settings page's question forms: show a question's scale fields or its comparison options
// by the kind chosen (docs/comparisons.md). Without this script every field shows and the server
// reads only those of the kind.
(function () {
  "use strict";

  function update(form) {
    var select = form.querySelector("select[name$='-kind']");
    if (!select) return;
    var kind = select.value || "scale";
    form.querySelectorAll("[data-kinds]").forEach(function (part) {
      var shown = part.getAttribute("data-kinds").split(" ").indexOf(kind) !== -1;
      part.hidden = !shown;
    });
  }

  function init() {
    document.querySelectorAll(".question-form").forEach(function (form) {
      var select = form.querySelector("select[name$='-kind']");
      if (!select) return;
      select.addEventListener("change", function () { update(form); });
      update(form);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
