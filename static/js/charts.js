// Concord charts: draw every <figure class="chart" data-chart-spec="ID"> from the Vega-Lite spec
// in <script type="application/json" id="ID"> (Django's json_script), with the vendored vega,
// vega-lite, vega-interpreter and vega-embed (static/vendor/vega/, loaded before this file).
//
// Works under the strict CSP (script-src 'self', style-src 'self', no unsafe-eval):
// - expressions are evaluated by vega-interpreter (`ast: true`), never compiled with Function;
// - nothing injects a <style> element: vega-embed's `defaultStyle: false` and the tooltip's
//   `disableDefaultStyle: true`; their CSS lives in static/css/charts.css;
// - no actions menu (the page links the spec and data downloads itself).
//
// The chart is drawn into a <div class="chart-view"> put first in the figure (created if
// absent), so the figure's <figcaption> stays. When the figure has a figcaption, the spec's own
// title is left out of the drawing (the caption already shows it; the downloaded spec keeps it).
// Each figure gets data-chart-state="rendered" or "error" (with a message in the figure).
// The dashboard draws its figures with the page (it loads no htmx); figures a page might swap
// in later with htmx are drawn on `htmx:load`; `ConcordCharts.render(root)` draws the figures
// under `root` by hand and returns a promise.
(function () {
  "use strict";

  function dropTitle(vgSpec) {
    delete vgSpec.title;
    return vgSpec;
  }

  function fail(figure, error) {
    figure.setAttribute("data-chart-state", "error");
    let note = figure.querySelector(".chart-error");
    if (!note) {
      note = document.createElement("p");
      note.className = "chart-error";
      figure.insertBefore(note, figure.firstChild);
    }
    note.textContent = "This chart could not be drawn: " + (error && error.message ? error.message : error);
    console.error("Concord chart", figure.getAttribute("data-chart-spec"), error);
  }

  function renderFigure(figure) {
    if (figure.hasAttribute("data-chart-state")) return Promise.resolve();
    figure.setAttribute("data-chart-state", "rendering");
    const id = figure.getAttribute("data-chart-spec");
    const source = id ? document.getElementById(id) : null;
    if (!source) {
      fail(figure, "no chart spec #" + id);
      return Promise.resolve();
    }
    if (typeof window.vegaEmbed !== "function" || !window.vegaInterpreter) {
      fail(figure, "the chart libraries did not load");
      return Promise.resolve();
    }
    let spec;
    try {
      spec = JSON.parse(source.textContent);
    } catch (error) {
      fail(figure, error);
      return Promise.resolve();
    }
    let view = figure.querySelector(".chart-view");
    if (!view) {
      view = document.createElement("div");
      view.className = "chart-view";
      figure.insertBefore(view, figure.firstChild);
    }
    const options = {
      renderer: "svg",
      actions: false,
      defaultStyle: false,
      ast: true,
      expr: window.vegaInterpreter.expressionInterpreter,
      tooltip: {disableDefaultStyle: true},
    };
    if (figure.querySelector("figcaption")) options.patch = dropTitle;
    return window.vegaEmbed(view, spec, options).then(
      function (result) {
        figure.chartView = result.view;
        figure.setAttribute("data-chart-state", "rendered");
      },
      function (error) {
        fail(figure, error);
      }
    );
  }

  function render(root) {
    const scope = root && root.querySelectorAll ? root : document;
    const figures = Array.prototype.slice.call(scope.querySelectorAll("figure.chart[data-chart-spec]"));
    if (scope.matches && scope.matches("figure.chart[data-chart-spec]")) figures.push(scope);
    return Promise.all(figures.map(renderFigure));
  }

  window.ConcordCharts = {render: render};
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      render(document);
    });
  } else {
    render(document);
  }
  document.addEventListener("htmx:load", function (event) {
    render(event.target);
  });
})();
