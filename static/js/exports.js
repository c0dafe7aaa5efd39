// Export job page: poll the job's status.json, show the progress, reload when it ends.
// Without scripts the page offers a refresh link instead (strict CSP: no inline script).
(function () {
  "use strict";
  var box = document.getElementById("export-job");
  if (!box || !box.dataset.statusUrl) { return; }
  var bar = document.getElementById("export-progress");
  var percent = document.getElementById("export-percent");
  var message = document.getElementById("export-message");
  var delay = 1000;

  function show(status) {
    bar.value = status.progress;
    bar.textContent = status.progress + " %";
    percent.textContent = status.progress + " %";
    message.textContent = status.status.charAt(0).toUpperCase() + status.status.slice(1) + ": " + status.message;
  }

  function poll() {
    fetch(box.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (status) {
        show(status);
        if (status.status === "done" || status.status === "failed") {
          window.location.reload();  // the server renders the download link or the error
          return;
        }
        delay = 1000;
        window.setTimeout(poll, delay);
      })
      .catch(function () {
        delay = Math.min(delay * 2, 15000);  // the server is away: back off, keep trying
        window.setTimeout(poll, delay);
      });
  }

  window.setTimeout(poll, delay);
}());
