// Concord: every box of a researcher's page that scrolls sideways can be reached and scrolled with
// the keyboard (WCAG 2.1.1; axe-core's rule scrollable-region-focusable).
//
// A wide table in its `.scroll` or `.table-scroll` box, a chart's drawing (`.chart-view`) and a
// method page's table or code block (`.doc table`, `.doc pre`) scroll inside their own box on a
// phone, never the page. When such a box is narrower than its content and holds nothing focusable,
// it gets tabindex="0" (the arrow keys then scroll it) and, a box of its own, role="region" and a
// name unique on the page: its table's caption, its figure's caption, or the heading above it with
// "(table)". A box that fits again (a wider window) loses them, so that a desktop page keeps no
// useless tab stop.
//
// Checked when the page has loaded, whenever the page changes (a chart drawn, an htmx swap) and
// whenever a box changes size (a <details> opened, the window resized); the boxes' focus outline
// is in css/concord.css.
(function () {
  "use strict";

  const BOXES = ".scroll, .table-scroll, .chart-view, .doc table, .doc pre";
  const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])";
  const MARK = "data-scroll-region";

  function text(node) {
    return node ? node.textContent.replace(/\s+/g, " ").trim() : "";
  }

  // The names of the page's other landmarks (its sections and regions): a box's name must differ
  // from all of them, its section's own included.
  function namesBut(box) {
    const names = new Set();
    document.querySelectorAll("section[aria-labelledby], section[aria-label], [role=region]").forEach(function (node) {
      if (node === box) return;
      const by = node.getAttribute("aria-labelledby");
      names.add(by ? by.split(/\s+/).map(function (id) { return text(document.getElementById(id)); }).join(" ")
                   : (node.getAttribute("aria-label") || "").trim());
    });
    return names;
  }

  // The box's caption, its figure's caption, or the heading above it with what the box holds.
  function nameOf(box) {
    let name = text(box.querySelector("caption"));
    const figure = box.closest("figure");
    if (!name && figure) name = text(figure.querySelector("figcaption"));
    if (!name) {
      let heading = "";
      for (let node = box; node && node !== document.body && !heading; node = node.parentElement) {
        for (let before = node.previousElementSibling; before && !heading; before = before.previousElementSibling) {
          if (/^H[1-6]$/.test(before.tagName)) heading = text(before);
        }
      }
      if (!heading) return "";
      name = heading + (box.querySelector("table") ? " (table)" : " (scrolls sideways)");
    }
    if (name.length > 120) name = name.slice(0, 117) + "…";
    const taken = namesBut(box);
    let unique = name;
    for (let n = 2; taken.has(unique); n += 1) unique = name + " " + n;
    return unique;
  }

  function update(box) {
    const marked = box.hasAttribute(MARK);
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    if (scrolls && !marked) {
      if (box.hasAttribute("tabindex") || box.querySelector(FOCUSABLE)) return;
      box.setAttribute(MARK, "");
      box.setAttribute("tabindex", "0");
      // A chart's drawing is already named by vega-embed (role graphics-document).
      if (box.tagName === "DIV" && !box.hasAttribute("role")) {
        const name = nameOf(box);
        if (name) {
          box.setAttribute("role", "region");
          box.setAttribute("aria-label", name);
        }
      }
    } else if (!scrolls && marked && document.activeElement !== box) {
      box.removeAttribute(MARK);
      box.removeAttribute("tabindex");
      if (box.getAttribute("role") === "region") {
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    }
  }

  // A box also changes size without any change to the page's elements: a <details> opened, a
  // font loaded, a window resized. Each box is watched once.
  const watched = new WeakSet();
  const sizes = typeof ResizeObserver === "function" ? new ResizeObserver(function (entries) {
    entries.forEach(function (entry) { update(entry.target); });
  }) : null;

  function updateAll() {
    document.querySelectorAll(BOXES).forEach(function (box) {
      if (sizes && !watched.has(box)) {
        watched.add(box);
        sizes.observe(box);
      }
      update(box);
    });
  }

  let pending = false;
  function later() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () {
      pending = false;
      updateAll();
    });
  }

  function start() {
    updateAll();
    window.addEventListener("resize", later);
    document.addEventListener("toggle", later, true);  // a <details> opened or closed
    // Our own attribute changes are not watched (attributes: false): no loop.
    new MutationObserver(function () {
      updateAll();
    }).observe(document.body, {childList: true, subtree: true});
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
