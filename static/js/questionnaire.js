// Concord questionnaire: timing, keyboard shortcuts, and answers that are never lost.
//
// Every answer goes into an outbox in localStorage before it is sent, and stays there until
// the server acknowledges it; failed sends are retried with back-off and at once when the
// browser comes back online. The answer's client id makes retries idempotent on the server.
// One item may ask several questions: one Confirm sends all of them in one payload,
// {"position", "client_id", "answers": {key: {"value", "cant_judge", "comment"}}, "active_ms",
// "events"}. Entries an older page left in the outbox ({"value": …}) are sent as they are.
// A comparative question (pairwise, ranking, best–worst; comparisons.js) sends
// {"choice": {…its stored form…} | null, "cant_judge", "comment"} instead of a value.
(function () {
  "use strict";
  // The instructions page's Start takes Enter at once, without scrolling past the
  // instructions (what the autofocus attribute would do on a phone).
  const start = document.querySelector("[data-autofocus]");
  if (start) start.focus({ preventScroll: true });
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
  const text = (id) => {
    const tpl = document.getElementById(id);
    return tpl ? tpl.content.textContent.trim() : id;
  };
  const say = (id, extra) => {
    status.textContent = text(id) + (extra ? " " + extra : "");
    status.dataset.state = id;
  };
  const storage = (area) => {
    try { return window[area]; } catch (e) { return null; }  // blocked storage throws
  };
  const local = storage("localStorage");
  const session = storage("sessionStorage");
  const read = (area, key) => {
    try { return area ? area.getItem(key) : null; } catch (e) { return null; }
  };
  const write = (area, key, value) => {
    try { if (area) area.setItem(key, value); } catch (e) { /* private mode, quota */ }
  };

  // --- the questions ---------------------------------------------------------------------
  const several = form.querySelectorAll("fieldset.question").length > 1;
  const comparative = window.ConcordComparative || null;
  let onComparative = () => {};  // set once the draft can be saved (below)
  const questions = Array.from(form.querySelectorAll("fieldset.question")).map((fieldset, n) => ({
    key: fieldset.dataset.question,
    comp: fieldset.dataset.kind && fieldset.dataset.kind !== "scale" && comparative
      ? comparative.attach(fieldset, () => {
        fieldset.classList.remove("missing");
        // "Answer this question first" is stale once it is answered.
        if (["msg-missing", "msg-choose"].includes(status.dataset.state)) {
          status.textContent = "";
          status.dataset.state = "";
        }
        events.push(["choose:" + (n + 1), rel()]);
        onComparative();
      }) : null,
    number: n + 1,
    fieldset: fieldset,
    prompt: fieldset.querySelector("legend").textContent.trim(),
    required: fieldset.dataset.required === "1",
    radios: Array.from(fieldset.querySelectorAll('input[type="radio"]')),
    cant: fieldset.querySelector('input[type="checkbox"][name^="cant_judge:"]'),
    comment: fieldset.querySelector("textarea"),
    chosenLabel: fieldset.querySelector(".chosen-label"),
  }));
  const chosen = (q) => q.radios.find((r) => r.checked) || null;
  const answered = (q) => (q.comp ? q.comp.choice() !== null : chosen(q) !== null)
    || (q.cant !== null && q.cant.checked);
  const controls = () => Array.from(form.querySelectorAll(".questions input, .questions textarea"));
  const locked = form.dataset.locked === "1";
  let lastQuestion = questions[0] || null;

  // "I can't judge this" stores a missing value: the question's radios are cleared and
  // disabled while it is ticked.
  const syncCant = (q) => {
    if (q.comp) {
      const cant = q.cant !== null && q.cant.checked;
      if (cant) q.comp.clear();
      q.comp.disable(cant || locked);
      return;
    }
    if (!q.cant) return;
    q.radios.forEach((r) => {
      if (q.cant.checked) r.checked = false;
      r.disabled = q.cant.checked || locked;
    });
    showChoice(q);
  };
  // Long labels (a 0–7 rubric) do not fit under their numbers: the chosen one is spelt out.
  const showChoice = (q) => {
    if (!q.chosenLabel) return;
    const r = chosen(q);
    const label = r && r.closest("label").querySelector(".label");
    q.chosenLabel.textContent = r ? r.value + (label ? ": " + label.textContent.trim() : "") : "";
  };
  questions.forEach((q) => {
    if (!q.comp) q.radios.forEach((r) => r.addEventListener("change", () => {
      lastQuestion = q;
      q.fieldset.classList.remove("missing");
      showChoice(q);
      events.push([several ? "select:" + q.number + ":" + r.value : "select:" + r.value, rel()]);
    }));
    if (q.cant) {
      q.cant.addEventListener("change", () => {
        lastQuestion = q;
        q.fieldset.classList.remove("missing");
        syncCant(q);
        events.push([(q.cant.checked ? "cant_judge:" : "cant_judge_off:") + q.number, rel()]);
      });
      syncCant(q);
    } else if (q.comp) {
      syncCant(q);
    }
    showChoice(q);
    q.fieldset.addEventListener("focusin", () => { lastQuestion = q; });
  });

  // The state to send: null and the question when a required one is unanswered.
  function collect() {
    const answers = {};
    for (const q of questions) {
      const cant = q.cant !== null && q.cant.checked;
      if (q.comp) {
        const choice = cant ? null : q.comp.choice();
        // Half a best–worst judgment is not an answer, even to an optional question.
        if (!cant && (q.comp.partial() || (choice === null && q.required))) {
          return { answers: null, missing: q };
        }
        answers[q.key] = {
          choice: choice,
          cant_judge: cant,
          comment: q.comment ? q.comment.value.trim() : "",
        };
        continue;
      }
      const r = chosen(q);
      if (!r && !cant && q.required) return { answers: null, missing: q };
      answers[q.key] = {
        value: r ? r.value : null,
        cant_judge: cant,
        comment: q.comment ? q.comment.value.trim() : "",
      };
    }
    return { answers: answers, missing: null };
  }
  // Going back to an item and confirming it unchanged stores no revision.
  const initial = form.dataset.revisit ? JSON.stringify(collect().answers) : null;

  // --- the choice not confirmed yet: kept in this browser, so a reload shows it again --------
  // One entry per participant (the form's action holds the link) and position, with each
  // question's choice, "can't judge" and comment; restored when the page loads, dropped once
  // the answer is stored (or confirmed unchanged). Not in a preview, nor on a locked answer.
  const drafting = !locked && !form.dataset.preview;
  const draftKey = "concord-draft:" + form.action + "#" + form.elements.position.value;
  const draftSave = () => {
    const state = {};
    questions.forEach((q) => {
      const r = q.comp ? null : chosen(q);
      state[q.key] = {
        value: r ? r.value : null,
        choice: q.comp ? q.comp.choice() : null,
        cant_judge: q.cant !== null && q.cant.checked,
        comment: q.comment ? q.comment.value : "",
      };
    });
    write(local, draftKey, JSON.stringify(state));
  };
  const draftDrop = () => {
    try { if (local) local.removeItem(draftKey); } catch (e) { /* blocked storage */ }
  };
  if (drafting) {
    let draft = null;
    try { draft = JSON.parse(read(local, draftKey) || "null"); } catch (e) { draft = null; }
    if (draft && typeof draft === "object") {
      questions.forEach((q) => {
        const kept = draft[q.key];
        if (!kept || typeof kept !== "object") return;
        if (q.cant) q.cant.checked = kept.cant_judge === true;
        if (q.comp) q.comp.restore(kept.choice || null);
        else q.radios.forEach((r) => { r.checked = kept.value !== null && r.value === String(kept.value); });
        if (q.comment && typeof kept.comment === "string" && kept.comment) {
          q.comment.value = kept.comment;
          const details = q.comment.closest("details");
          if (details) details.open = true;
        }
        syncCant(q);
      });
    }
    form.addEventListener("change", draftSave);
    onComparative = draftSave;  // a ranking's moves change no input
    form.addEventListener("input", (e) => { if (e.target instanceof HTMLTextAreaElement) draftSave(); });
  }

  // --- the rating guide: shown once, open or closed as the annotator left it --------------
  const rubric = document.getElementById("rubric");
  const rubricKey = "concord-rubric:" + form.action;
  if (rubric) {
    const saved = read(local, rubricKey);
    // Until the annotator chooses, a phone starts with the guide closed: open, it would fill
    // the first screen (the instructions page showed it in full).
    const narrow = window.matchMedia("(max-width: 55.99rem)").matches;
    const wanted = saved === "closed" || (saved === null && narrow) ? false
      : saved === "open" ? true : rubric.open;
    // A "toggle" event also follows the parser's opening of a guide rendered open and the
    // line below, each at a moment of its own: only a change from the state last seen is the
    // annotator's, and only that is remembered.
    rubric.open = wanted;
    let seen = rubric.open;
    rubric.addEventListener("toggle", () => {
      if (rubric.open === seen) return;
      seen = rubric.open;
      write(local, rubricKey, seen ? "open" : "closed");
    });
  }
  form.querySelectorAll("a.guide-link").forEach((link) => link.addEventListener("click", (e) => {
    const target = document.getElementById(link.hash.slice(1));
    if (!rubric || !target) return;
    e.preventDefault();
    rubric.open = true;
    target.scrollIntoView({ block: "start" });
    target.focus({ preventScroll: true });
  }));

  // --- the outbox --------------------------------------------------------------------------
  const position = Number(form.elements.position.value);
  const csrf = form.elements.csrfmiddlewaretoken.value;
  const key = "concord-outbox:" + form.action;
  const load = () => {
    try { return JSON.parse(read(local, key) || "{}"); } catch (e) { return {}; }
  };
  const store = (box) => write(local, key, JSON.stringify(box));
  let current = null;
  // Answers a paused study refused: kept in the outbox, sent by a page of the reopened study.
  const held = new Set();
  let sending = false;
  let delay = 1000;
  let timer = null;

  const enable = () => {
    controls().forEach((c) => { c.disabled = locked; });
    questions.forEach(syncCant);
  };
  const disableAll = () => {
    controls().forEach((c) => { c.disabled = true; });
    questions.forEach((q) => { if (q.comp) q.comp.disable(true); });
  };

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
    let changed = false;
    for (const [id, payload] of Object.entries(load())) {
      if (held.has(id)) continue;
      let result = null;
      try { result = await send(payload); } catch (e) { failed = true; continue; }
      const box = load();
      if (result.status >= 200 && result.status < 300 && result.body && result.body.stored) {
        delete box[id];
        store(box);
        if (payload.position === position) {
          draftDrop();
          nextUrl = result.body.next;
          changed = result.body.revision > 1;
        }
      } else if (result.status === 409 && result.body && result.body.study_status) {
        // The study was paused or closed before this answer could be accepted (an item shown
        // before the change is accepted for a grace period, so this one came too late). A pause
        // keeps the answer here, sent when a page of the reopened study loads; a close drops
        // it. Either way the annotator is told, and led to the "your answers are saved" page.
        const paused = result.body.study_status === "paused";
        if (paused) {
          held.add(id);
        } else {
          delete box[id];
          store(box);
        }
        if (current && current.client_id === id) current = null;
        say(paused ? "msg-paused" : "msg-closed");
        const link = document.getElementById("saved-link");
        if (link && result.body.next) {
          link.href = result.body.next;
          link.hidden = false;
          link.focus();
        }
        const submitButton = document.getElementById("submit");
        if (submitButton) submitButton.hidden = true;
      } else if (result.status >= 400 && result.status < 500 && ![408, 425, 429].includes(result.status)) {
        // Refused for good (study closed, bad value, an answer that can no longer be
        // changed): keeping it would retry forever.
        delete box[id];
        store(box);
        if (current && current.client_id === id) {
          current = null;
          const error = (result.body && result.body.error) || "";
          if (result.status === 409 && /can no longer be changed/.test(error)) {
            say("msg-locked");
            const next = document.getElementById("continue");
            if (next) next.hidden = false;
          } else {
            enable();
            status.textContent = error || "Error " + result.status;
            status.dataset.state = "error";
          }
        } else {
          // An answer an earlier page left unsent was refused for good: say so, never silently.
          say("msg-earlier-refused", (result.body && result.body.error) || "");
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
        if (changed) {
          say("msg-changed");
          // Said again on the page the annotator continues to, where there is time to read it.
          write(session, "concord-said", "msg-changed");
        } else {
          say("msg-saved");
        }
        window.location.assign(nextUrl);
      }
    }
  }

  function submit() {
    if (locked) { window.location.assign(form.dataset.next); return; }
    if (form.dataset.preview) { say("msg-preview"); return; }
    if (current) { delay = 1000; flush(); return; }
    const { answers, missing } = collect();
    if (missing) {
      missing.fieldset.classList.add("missing");
      if (several) say("msg-missing", missing.prompt); else say("msg-choose");
      const first = missing.comp ? missing.comp.first() : missing.radios.find((r) => !r.disabled);
      if (first) first.focus();
      return;
    }
    if (initial !== null && JSON.stringify(answers) === initial) {
      draftDrop();
      window.location.assign(form.dataset.next);
      return;
    }
    const hiddenNow = hiddenSince !== null ? performance.now() - hiddenSince : 0;
    const active = Math.max(1, Math.round(performance.now() - shownAt - hiddenMs - hiddenNow));
    events.push(["answer", rel()]);
    current = {
      position: position,
      client_id: form.elements.client_id.value,
      answers: answers,
      active_ms: active,
      events: events.slice(),
    };
    const box = load();
    box[current.client_id] = current;
    store(box);
    disableAll();
    say("msg-saving");
    flush();
  }

  // --- the keyboard --------------------------------------------------------------------------
  // A number key answers the question that has the focus, or else the first one still
  // unanswered (or the last one touched); the focus then moves on to the next unanswered
  // question, so a run of number keys answers the questions in order. Tab and Shift+Tab move
  // between questions (each radio group is one stop), the arrow keys within one.
  function target(element) {
    const fieldset = element instanceof Element ? element.closest("fieldset.question") : null;
    const own = fieldset && questions.find((q) => q.fieldset === fieldset);
    // A question just marked "can't judge" takes no number: the next unanswered one does.
    // A comparative question takes none either (its choices name outputs, not numbers).
    if (own && !own.comp && own.radios.some((r) => !r.disabled)) return own;
    return questions.find((q) => !q.comp && !answered(q)) || lastQuestion;
  }

  function choose(q, radio) {
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    const next = questions.slice(q.number).find((other) => !answered(other))
      || questions.find((other) => !answered(other));
    const focus = !next ? radio : next.comp ? next.comp.first()
      : (chosen(next) || next.radios.find((r) => !r.disabled));
    if (focus) focus.focus();
  }

  form.noValidate = true;  // the script says which question is missing, the browser cannot
  form.addEventListener("submit", (e) => { e.preventDefault(); submit(); });
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.isComposing) return;
    const el = e.target;
    const typing = el instanceof HTMLTextAreaElement
      || (el instanceof HTMLInputElement && !["radio", "checkbox", "submit", "button"].includes(el.type))
      || (el instanceof HTMLElement && el.isContentEditable);
    if (/^[0-9]$/.test(e.key)) {
      if (typing || locked) return;
      const q = target(el);
      const r = q && !q.comp && q.radios.find((x) => x.value === e.key);
      if (r && !r.disabled) {
        e.preventDefault();
        choose(q, r);
      }
    } else if (e.key === "Enter") {
      if (typing || el instanceof HTMLButtonElement || el instanceof HTMLAnchorElement
          || (el instanceof HTMLElement && el.tagName === "SUMMARY")) return;
      e.preventDefault();
      submit();
    }
  });
  window.addEventListener("online", () => { delay = 1000; flush(); });
  window.addEventListener("beforeunload", (e) => {
    if (Object.keys(load()).some((id) => !held.has(id))) { e.preventDefault(); e.returnValue = ""; }
  });
  // A page restored from the back-forward cache shows an item already sent: show the
  // resume point instead.
  window.addEventListener("pageshow", (e) => { if (e.persisted) window.location.reload(); });
  const said = read(session, "concord-said");
  if (said) {
    try { session.removeItem("concord-said"); } catch (e) { /* blocked storage */ }
    say(said);
  }
  // Answers left unacknowledged by an earlier page (closed tab, reload) go first.
  if (Object.keys(load()).length) flush();
  // Keys typed before this point went nowhere: tests (and scripts) wait for this mark.
  form.dataset.ready = "true";
})();
