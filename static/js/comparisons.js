// Concord comparative questions on the item page: pairwise preference, ranking, best–worst.
//
// questionnaire.js owns the page (outbox, timing, drafts, Confirm); for each fieldset with a
// data-kind other than "scale" it calls ConcordComparative.attach(fieldset, changed), which
// returns the question's judgment in its stored form (core/comparative.py), naming outputs by
// their external ids, never sides, with `shown`, the order this participant sees them:
//   pairwise {"shown", "pick": id | "tie", "strength": "" | "slightly" | "much"}
//   ranking  {"shown", "order": [[id], [id, id], …]}  (best first; a group is a tie)
//   bws      {"shown", "best": id, "worst": id}
// A ranking is reordered by drag (pointer events: mouse, pen and touch alike), by the arrow keys
// on a focused output, or by its "Move up" / "Move down" buttons; it counts as answered once the
// annotator moved an output, tied one, or kept the order shown.
(function () {
  "use strict";

  function radios(fieldset, name) {
    return Array.from(fieldset.querySelectorAll('input[type="radio"][name^="' + name + ':"]'));
  }
  const checked = (list) => { const r = list.find((x) => x.checked); return r ? r.value : null; };
  const set = (list, value) => list.forEach((r) => { r.checked = value !== null && r.value === value; });

  function pairwise(fieldset, shown, changed) {
    const picks = radios(fieldset, "pick");
    const strengths = radios(fieldset, "strength");
    const sync = () => {
      // A tie has no strength.
      const tie = checked(picks) === "tie";
      strengths.forEach((r) => {
        if (tie) r.checked = false;
        r.disabled = tie || fieldset.dataset.off === "1";
      });
    };
    picks.concat(strengths).forEach((r) => r.addEventListener("change", () => { sync(); changed(); }));
    sync();
    return {
      choice() {
        const pick = checked(picks);
        if (pick === null) return null;
        return { shown: shown, pick: pick, strength: pick === "tie" ? "" : (checked(strengths) || "") };
      },
      partial() { return false; },
      restore(choice) {
        set(picks, choice && choice.pick ? choice.pick : null);
        set(strengths, choice && choice.strength ? choice.strength : null);
        sync();
      },
      clear() { set(picks, null); set(strengths, null); },
      disable(off) {
        fieldset.dataset.off = off ? "1" : "";
        picks.forEach((r) => { r.disabled = off; });
        sync();
      },
      first() { return picks.find((r) => r.checked) || picks[0]; },
    };
  }

  function bws(fieldset, shown, changed) {
    const best = radios(fieldset, "best");
    const worst = radios(fieldset, "worst");
    // One best and one worst, two different outputs: marking an output best clears it as worst.
    const other = (mine, theirs) => mine.forEach((r) => r.addEventListener("change", () => {
      theirs.forEach((t) => { if (t.checked && t.value === r.value) t.checked = false; });
      changed();
    }));
    other(best, worst);
    other(worst, best);
    return {
      choice() {
        const b = checked(best);
        const w = checked(worst);
        return b !== null && w !== null ? { shown: shown, best: b, worst: w } : null;
      },
      partial() { return (checked(best) === null) !== (checked(worst) === null); },
      restore(choice) {
        set(best, choice && choice.best ? choice.best : null);
        set(worst, choice && choice.worst ? choice.worst : null);
      },
      clear() { set(best, null); set(worst, null); },
      disable(off) { best.concat(worst).forEach((r) => { r.disabled = off; }); },
      first() {
        return best.find((r) => r.checked && !checked(worst)) || (checked(best) === null ? best[0] : worst[0]);
      },
    };
  }

  function ranking(fieldset, shown, changed) {
    const list = fieldset.querySelector(".ranking-list");
    const status = fieldset.querySelector(".rank-status");
    const keep = fieldset.querySelector(".keep-order");
    const hidden = fieldset.querySelector('input[type="hidden"][name^="order:"]');
    const rows = () => Array.from(list.querySelectorAll(".rank-row"));
    let off = false;
    const name = (row) => row.querySelector(".rank-name").textContent.trim();

    function order() {
      const groups = [];
      rows().forEach((row, n) => {
        const tie = row.querySelector(".tie-above");
        if (n > 0 && tie && tie.checked) groups[groups.length - 1].push(row.dataset.output);
        else groups.push([row.dataset.output]);
      });
      return groups;
    }
    // Numbers, the first row's tie (nothing above it), the buttons at either end, the form field.
    function refresh() {
      const all = rows();
      let rank = 0;
      all.forEach((row, n) => {
        const tie = row.querySelector(".tie-above");
        if (tie) {
          if (n === 0) tie.checked = false;
          tie.closest("label").hidden = n === 0;
          tie.disabled = off;
        }
        if (!(n > 0 && tie && tie.checked)) rank = n + 1;
        row.querySelector(".rank-number").textContent = String(rank);
        row.querySelector('[data-move="-1"]').disabled = off || n === 0;
        row.querySelector('[data-move="1"]').disabled = off || n === all.length - 1;
        row.setAttribute("aria-disabled", off ? "true" : "false");
      });
      if (keep) keep.disabled = off;
      list.classList.toggle("ranked", list.dataset.ranked === "1");
      if (hidden) hidden.value = list.dataset.ranked === "1" ? JSON.stringify(order()) : "";
    }
    function ranked() {
      list.dataset.ranked = "1";
      fieldset.classList.remove("missing");
      refresh();
      changed();
    }
    function announce(row) {
      const at = rows().indexOf(row) + 1;
      const template = list.dataset.moved || "{name}: {at} of {total}";
      if (status) {
        status.textContent = template.replace("{name}", name(row)).replace("{at}", at)
          .replace("{total}", rows().length);
      }
    }
    function move(row, step) {
      if (off) return false;
      const all = rows();
      const at = all.indexOf(row);
      const to = at + step;
      if (to < 0 || to >= all.length) return false;
      if (step < 0) list.insertBefore(row, all[to]);
      else list.insertBefore(row, all[to].nextSibling);
      ranked();
      announce(row);
      return true;
    }

    list.addEventListener("click", (e) => {
      const button = e.target instanceof Element ? e.target.closest("button[data-move]") : null;
      if (!button) return;
      const row = button.closest(".rank-row");
      move(row, Number(button.dataset.move));
      // Keep the focus on the button that moved, or its row when it is now at the end.
      if (button.disabled) row.focus(); else button.focus();
    });
    list.addEventListener("change", (e) => {
      if (e.target instanceof HTMLInputElement && e.target.classList.contains("tie-above")) ranked();
    });
    list.addEventListener("keydown", (e) => {
      const row = e.target instanceof Element && e.target.classList.contains("rank-row") ? e.target : null;
      if (!row || e.altKey || e.ctrlKey || e.metaKey) return;
      if (e.key === "ArrowUp" || e.key === "ArrowDown") {
        e.preventDefault();
        move(row, e.key === "ArrowUp" ? -1 : 1);
        row.focus();
      }
    });
    if (keep) keep.addEventListener("click", () => { if (!off) ranked(); });

    // Drag: the row follows the pointer; passing another row's middle swaps them.
    let dragging = null;
    list.addEventListener("pointerdown", (e) => {
      // A drag whose end never arrived (a lost pointerup) ends before anything else happens.
      if (dragging) drop({ pointerId: dragging.id });
      const row = e.target instanceof Element ? e.target.closest(".rank-row") : null;
      if (!row || off || e.button > 0 || e.target.closest("button, input, label")) return;
      dragging = { row: row, id: e.pointerId, moved: false };
      row.setPointerCapture(e.pointerId);
      row.classList.add("dragging");
      e.preventDefault();
      row.focus({ preventScroll: true });
    });
    list.addEventListener("pointermove", (e) => {
      if (!dragging || e.pointerId !== dragging.id) return;
      const all = rows();
      const at = all.indexOf(dragging.row);
      const above = all[at - 1];
      const below = all[at + 1];
      if (above) {
        const box = above.getBoundingClientRect();
        if (e.clientY < box.top + box.height / 2) {
          list.insertBefore(dragging.row, above);
          dragging.moved = true;
          return;
        }
      }
      if (below) {
        const box = below.getBoundingClientRect();
        if (e.clientY > box.top + box.height / 2) {
          list.insertBefore(dragging.row, below.nextSibling);
          dragging.moved = true;
        }
      }
    });
    function drop(e) {
      if (!dragging || e.pointerId !== dragging.id) return;
      const row = dragging.row;
      const moved = dragging.moved;
      dragging = null;
      row.classList.remove("dragging");
      if (moved) { ranked(); announce(row); }
    }
    list.addEventListener("pointerup", drop);
    list.addEventListener("pointercancel", drop);
    refresh();

    function place(groups) {
      const byId = new Map(rows().map((row) => [row.dataset.output, row]));
      const flat = [];
      groups.forEach((group) => group.forEach((id, n) => flat.push([id, n > 0])));
      if (flat.length !== byId.size || !flat.every(([id]) => byId.has(id))) return false;
      flat.forEach(([id, tied]) => {
        const row = byId.get(id);
        list.appendChild(row);
        const tie = row.querySelector(".tie-above");
        if (tie) tie.checked = tied;
      });
      return true;
    }

    return {
      choice() { return list.dataset.ranked === "1" ? { shown: shown, order: order() } : null; },
      partial() { return false; },
      restore(choice) {
        if (choice && Array.isArray(choice.order) && place(choice.order)) list.dataset.ranked = "1";
        else { place(shown.map((id) => [id])); list.dataset.ranked = ""; }
        refresh();
      },
      clear() { list.dataset.ranked = ""; refresh(); },
      disable(value) { off = value; refresh(); },
      first() { return rows()[0]; },
    };
  }

  const kinds = { pairwise: pairwise, ranking: ranking, bws: bws };

  window.ConcordComparative = {
    attach(fieldset, changed) {
      let shown = [];
      try { shown = JSON.parse(fieldset.dataset.shown || "[]"); } catch (e) { shown = []; }
      const make = kinds[fieldset.dataset.kind];
      return make ? make(fieldset, shown, changed || (() => {})) : null;
    },
  };
})();
