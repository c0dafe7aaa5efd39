/* Concord results dashboard: follow the active analysis run until it finishes, then reload.
   Classic script, no inline code (strict CSP). Without JavaScript the page offers a refresh link. */
(function () {
  "use strict";
  var box = document.getElementById("run-progress");
  if (!box) { return; }
  var url = box.getAttribute("data-status-url");
  var bar = box.querySelector("progress");
  var pct = box.querySelector(".run-pct");
  var state = box.querySelector(".run-state");
  var message = box.querySelector(".run-message");
  var alert = box.querySelector(".run-alert");
  var hint = box.querySelector(".noscript-hint");
  var labels = { queued: "Queued", running: "Running", done: "Done", failed: "Failed" };
  var failures = 0;
  if (hint) { hint.hidden = true; }

  function show(run) {
    bar.value = run.progress;
    bar.textContent = run.progress + " %";
    pct.textContent = run.progress + " %";
    state.textContent = labels[run.status] || run.status;
    message.textContent = run.status === "failed" ? (run.error || run.message) : run.message;
    box.setAttribute("data-status", run.status);
    if (run.stalled) {
      alert.textContent = run.stalled_message;
      alert.hidden = false;
    } else if (failures === 0) {
      alert.hidden = true;
    }
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (run) {
        failures = 0;
        show(run);
        if (run.status === "done") {
          window.location.replace(window.location.pathname + window.location.search + "#overview");
          window.location.reload();
        } else if (run.status !== "failed") {
          window.setTimeout(poll, 1000);
        }
      })
      .catch(function () {
        failures += 1;
        alert.textContent = "The server is not answering; retrying…";
        alert.hidden = false;
        window.setTimeout(poll, Math.min(30000, 1000 * Math.pow(2, failures)));
      });
  }
  poll();
})();
