// Copy buttons: a button with data-copy="ID" copies the text of the element with that id.
// The buttons are hidden until this script shows them (without it, select the text by hand).
(function () {
  "use strict";

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(text); });
    }
    return fallbackCopy(text);
  }

  function say(button, label) {
    button.textContent = label;
    window.clearTimeout(button._copyTimer);
    button._copyTimer = window.setTimeout(function () { button.textContent = "Copy"; }, 2000);
  }

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) { return; }
    button.hidden = false;
    button.setAttribute("aria-label", "Copy " + (target.id === "prolific-link" ? "the Prolific URL" : "the link"));
    button.addEventListener("click", function () {
      copy(target.textContent.trim()).then(function () { say(button, "Copied"); },
                                           function () { say(button, "Select and copy"); });
    });
  });
})();
