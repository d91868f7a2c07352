// Renders every chart from its JSON block. Colours follow the reader's light/dark setting.
(function () {
  function themed(layout) {
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    var fg = dark ? "#e2e8f0" : "#1e293b", grid = dark ? "#334155" : "#e2e8f0";
    layout.font = Object.assign({}, layout.font, { color: fg });
    ["xaxis", "yaxis"].forEach(function (ax) {
      layout[ax] = Object.assign({}, layout[ax], { gridcolor: grid, linecolor: grid });
    });
    return layout;
  }
  document.querySelectorAll("[data-figure]").forEach(function (el) {
    var spec = JSON.parse(document.getElementById(el.getAttribute("data-figure")).textContent);
    Plotly.newPlot(el, spec.data, themed(spec.layout), { responsive: true, displaylogo: false });
  });
})();
