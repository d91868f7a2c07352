// Renders every chart from its JSON block with the shared look, in the reader's light or dark colours,
// and re-colours them when the system setting changes. No network, no inline script.
(function () {
  "use strict";
  var LIGHT = { fg: "#1e293b", muted: "#64748b", grid: "#e2e8f0",
    colorway: ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626", "#475569"] };
  var DARK = { fg: "#e2e8f0", muted: "#94a3b8", grid: "#2b3a52",
    colorway: ["#60a5fa", "#fbbf24", "#34d399", "#f472b6", "#a78bfa", "#22d3ee", "#a3e635", "#f87171", "#94a3b8"] };
  var query = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function palette() { return query && query.matches ? DARK : LIGHT; }

  function themed(layout) {
    var t = palette();
    layout.font = Object.assign({}, layout.font, { color: t.fg });
    layout.colorway = t.colorway;
    layout.hoverlabel = Object.assign({}, layout.hoverlabel, { bgcolor: t === DARK ? "#1e293b" : "#ffffff",
      bordercolor: t.grid, font: Object.assign({}, (layout.hoverlabel || {}).font, { color: t.fg }) });
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        var ax = layout[key];
        layout[key] = Object.assign({}, ax, { gridcolor: t.grid, linecolor: t.grid, tickcolor: t.grid,
          title: Object.assign({}, ax.title, { font: Object.assign({}, (ax.title || {}).font, { color: t.muted }) }) });
      }
    });
    // Reference-line labels (peak, roof, formula) on a veil of the page colour, readable over bars.
    (layout.annotations || []).forEach(function (a) {
      a.font = Object.assign({}, a.font, { color: t.muted });
      if (!a.bgcolor) { a.bgcolor = t === DARK ? "rgba(15,23,42,0.8)" : "rgba(255,255,255,0.8)"; }
    });
    return layout;
  }

  // Pages may pin a trace to a palette colour (charts.PALETTE[i]); give it the same slot of the dark
  // palette, and draw error bars (p25-p75) in the muted ink of the theme.
  function recolor(data) {
    var t = palette(), map = {};
    LIGHT.colorway.forEach(function (c, i) { map[c.toLowerCase()] = t.colorway[i]; });
    function swap(c) { return typeof c === "string" && map[c.toLowerCase()] ? map[c.toLowerCase()] : c; }
    data.forEach(function (tr) {
      ["marker", "line"].forEach(function (k) {
        if (!tr[k]) { return; }
        tr[k].color = Array.isArray(tr[k].color) ? tr[k].color.map(swap) : swap(tr[k].color);
        if (tr[k].line) { tr[k].line.color = swap(tr[k].line.color); }
      });
      ["error_x", "error_y"].forEach(function (k) {
        if (tr[k] && !tr[k].color) { tr[k].color = t.muted; }
      });
    });
    return data;
  }

  // On a phone a legend above the plot eats its height (six entries leave a 130 px plot): put it below
  // and grow the figure by its rows, so the plot keeps its size.
  function fitNarrow(el, layout, data) {
    if (el.clientWidth >= 560) { return layout; }
    var entries = data.filter(function (t) { return t.showlegend !== false; }).length;
    if (entries < 2) { return layout; }
    var rows = 22 * entries;
    layout.legend = Object.assign({}, layout.legend, { orientation: "v", x: 0, xanchor: "left", y: -0.28,
      yanchor: "top" });
    layout.height = (layout.height || 380) + rows;
    layout.margin = Object.assign({}, layout.margin, { b: ((layout.margin || {}).b || 56) + rows + 30 });
    return layout;
  }

  function draw(el) {
    var spec = JSON.parse(document.getElementById(el.getAttribute("data-figure")).textContent);
    fitNarrow(el, spec.layout, spec.data);
    recolor(spec.data);
    // Traces without an explicit colour follow the colorway; reset it so a theme switch re-colours them.
    return Plotly.react(el, spec.data, themed(spec.layout),
      { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"] });
  }

  function drawAll() {
    if (typeof Plotly === "undefined") { return; }
    document.querySelectorAll("[data-figure]").forEach(draw);
  }

  // On a phone the navigation is one scrolling row: bring the current page's link into view.
  var nav = document.querySelector("nav"), here = document.querySelector('nav a[aria-current="page"]');
  if (nav && here && nav.scrollWidth > nav.clientWidth) {
    nav.scrollLeft = here.offsetLeft - nav.offsetLeft - (nav.clientWidth - here.offsetWidth) / 2;
  }

  // Long tables (class "sortable", more than 15 rows) sort by any column: each header is a button, so a
  // click, Enter or Space sorts; aria-sort tells screen readers the order. Numbers sort by their value
  // (data-sort), the rest as text; empty cells ("–") go last either way.
  function cellKey(row, i) {
    var cell = row.cells[i];
    if (!cell) { return null; }
    if (cell.hasAttribute("data-sort")) { return parseFloat(cell.getAttribute("data-sort")); }
    var text = cell.textContent.trim();
    return text === "–" || text === "" ? null : text.toLowerCase();
  }
  function sortBy(table, i, th) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    rows.sort(function (a, b) {
      var x = cellKey(a, i), y = cellKey(b, i);
      if (x === null || y === null) { return (x === null) - (y === null); }
      if (typeof x === "number" && typeof y === "number") { return dir * (x - y); }
      return dir * String(x).localeCompare(String(y), undefined, { numeric: true });
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = th.textContent;
      button.title = "Sort by " + th.textContent;
      button.addEventListener("click", function () { sortBy(table, i, th); });
      th.textContent = "";
      th.appendChild(button);
    });
  });

  drawAll();
  if (query && query.addEventListener) { query.addEventListener("change", drawAll); }
})();
