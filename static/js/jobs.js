/* Concord background jobs (analysis runs, exports): follow each [data-job] box until its job ends.
   Classic script, no inline code (strict CSP). What it needs is in the box's data- attributes:
   data-status-url (the job's status.json), data-reload-on (the statuses after which the page
   reloads, e.g. "done failed"; the server then renders the results, the file or the error) and
   data-done-hash (optional: where the reloaded page opens once the job is done). It updates the
   parts marked data-job-part: bar, percent, state, message, alert; it hides the refresh part,
   the Refresh link that serves without JavaScript. Markup: templates/jobs/_progress.html. */
(function () {
  "use strict";

  function follow(box) {
    var url = box.getAttribute("data-status-url");
    if (!url) { return; }
    var reloadOn = (box.getAttribute("data-reload-on") || "done").split(/\s+/);
    var doneHash = box.getAttribute("data-done-hash");
    function part(name) { return box.querySelector("[data-job-part='" + name + "']"); }
    var bar = part("bar");
    var percent = part("percent");
    var state = part("state");
    var message = part("message");
    var alert = part("alert");
    var refresh = part("refresh");
    var failures = 0;
    if (refresh) { refresh.hidden = true; }

    function show(job) {
      if (bar) {
        bar.value = job.progress;
        bar.textContent = job.progress + " %";
      }
      if (percent) { percent.textContent = job.progress + " %"; }
      if (state) { state.textContent = job.status_label || job.status; }
      if (message) { message.textContent = job.status === "failed" ? (job.error || job.message) : job.message; }
      box.setAttribute("data-status", job.status);
      if (alert) {
        alert.textContent = job.stalled ? job.stalled_message : "";
        alert.hidden = !job.stalled;
      }
    }

    function reload(status) {
      if (status === "done" && doneHash) {
        // Only the hash changes, which does not load the page: reload it after.
        window.location.replace(window.location.pathname + window.location.search + doneHash);
      }
      window.location.reload();
    }

    function poll() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.json();
        })
        .then(function (job) {
          failures = 0;
          show(job);
          if (reloadOn.indexOf(job.status) >= 0) {
            reload(job.status);
          } else if (job.status === "queued" || job.status === "running") {
            window.setTimeout(poll, 1000);
          }
        })
        .catch(function () {
          // The server is away (a restart, a network loss): say so, back off, keep trying.
          failures += 1;
          if (alert) {
            alert.textContent = "The server is not answering; retrying…";
            alert.hidden = false;
          }
          window.setTimeout(poll, Math.min(30000, 1000 * Math.pow(2, failures)));
        });
    }

    poll();
  }

  Array.prototype.forEach.call(document.querySelectorAll("[data-job]"), follow);
}());
