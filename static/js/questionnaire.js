// Concord questionnaire: timing, keyboard shortcuts, and answers that are never lost.
//
// Every answer goes into an outbox in localStorage before it is sent, and stays there until
// the server acknowledges it; failed sends are retried with back-off and at once when the
// browser comes back online. The answer's client id makes retries idempotent on the server.
(function () {
  "use strict";
  const form = document.getElementById("answer-form");
  if (!form) return;

  const shownAt = performance.now();
  const rel = () => Math.round(performance.now() - shownAt);
  const events = [["shown", 0]];
  let hiddenMs = 0;
  let hiddenSince = document.hidden ? shownAt : null;
  document.addEventListener("visibilitychange", () => {
    const now = performance.now();
    if (document.hidden) {
      hiddenSince = now;
      events.push(["hidden", rel()]);
    } else {
      if (hiddenSince !== null) hiddenMs += now - hiddenSince;
      hiddenSince = null;
      events.push(["visible", rel()]);
    }
  });

  const status = document.getElementById("save-status");
  const say = (id, extra) => {
    const tpl = document.getElementById(id);
    status.textContent = (tpl ? tpl.content.textContent.trim() : id) + (extra ? " " + extra : "");
    status.dataset.state = id;
  };
  const radios = Array.from(form.querySelectorAll('input[name="value"]'));
  radios.forEach((r) => r.addEventListener("change", () => events.push(["select:" + r.value, rel()])));
  const position = Number(form.elements.position.value);
  const csrf = form.elements.csrfmiddlewaretoken.value;
  const key = "concord-outbox:" + form.action;
  const load = () => {
    try { return JSON.parse(localStorage.getItem(key) || "{}"); } catch (e) { return {}; }
  };
  const store = (box) => {
    try { localStorage.setItem(key, JSON.stringify(box)); } catch (e) { /* private mode */ }
  };
  let current = null;
  let sending = false;
  let delay = 1000;
  let timer = null;

  async function send(payload) {
    const res = await fetch(form.action, {
      method: "POST",
      credentials: "same-origin",
      cache: "no-store",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(payload),
    });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    return { status: res.status, body };
  }

  async function flush() {
    if (sending) return;
    sending = true;
    clearTimeout(timer);
    let failed = false;
    let nextUrl = null;
    for (const [id, payload] of Object.entries(load())) {
      let result = null;
      try { result = await send(payload); } catch (e) { failed = true; continue; }
      const box = load();
      if (result.status >= 200 && result.status < 300 && result.body && result.body.stored) {
        delete box[id];
        store(box);
        if (payload.position === position) nextUrl = result.body.next;
      } else if (result.status >= 400 && result.status < 500 && ![408, 425, 429].includes(result.status)) {
        // Refused for good (study closed, bad value): keeping it would retry forever.
        delete box[id];
        store(box);
        if (current && current.client_id === id) {
          current = null;
          radios.forEach((r) => { r.disabled = false; });
          status.textContent = (result.body && result.body.error) || "Error " + result.status;
          status.dataset.state = "error";
        }
      } else {
        failed = true;
      }
    }
    sending = false;
    if (failed) {
      say("msg-pending");
      timer = setTimeout(flush, delay);
      delay = Math.min(delay * 2, 10000);
    } else {
      delay = 1000;
      if (nextUrl) {
        say("msg-saved");
        window.location.assign(nextUrl);
      }
    }
  }

  function submit() {
    if (form.dataset.preview) { say("msg-preview"); return; }
    if (current) { delay = 1000; flush(); return; }
    const chosen = radios.find((r) => r.checked);
    if (!chosen) { say("msg-choose"); return; }
    const hiddenNow = hiddenSince !== null ? performance.now() - hiddenSince : 0;
    const active = Math.max(1, Math.round(performance.now() - shownAt - hiddenMs - hiddenNow));
    events.push(["answer", rel()]);
    current = {
      position: position,
      client_id: form.elements.client_id.value,
      value: chosen.value,
      active_ms: active,
      events: events.slice(),
    };
    const box = load();
    box[current.client_id] = current;
    store(box);
    radios.forEach((r) => { r.disabled = true; });
    say("msg-saving");
    flush();
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); submit(); });
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.isComposing) return;
    if (/^[0-9]$/.test(e.key)) {
      const r = radios.find((x) => x.value === e.key);
      if (r && !r.disabled) {
        r.checked = true;
        r.focus();
        r.dispatchEvent(new Event("change"));
        e.preventDefault();
      }
    } else if (e.key === "Enter" && !(e.target instanceof HTMLButtonElement) && !(e.target instanceof HTMLAnchorElement)) {
      e.preventDefault();
      submit();
    }
  });
  window.addEventListener("online", () => { delay = 1000; flush(); });
  window.addEventListener("beforeunload", (e) => {
    if (Object.keys(load()).length) { e.preventDefault(); e.returnValue = ""; }
  });
  // Answers left unacknowledged by an earlier page (closed tab, reload) go first.
  if (Object.keys(load()).length) flush();
})();
