(function () {
  "use strict";
  var form = document.getElementById("filters");
  var selects = form.querySelectorAll("select[data-key]");
  var rows = document.querySelectorAll("[data-filter]");
  var targets = document.querySelectorAll("section.target");
  var count = document.getElementById("f-count");
  function has(list, word) {
    return (" " + list + " ").indexOf(" " + word + " ") >= 0;
  }
  function apply() {
    var f = {};
    selects.forEach(function (s) { f[s.dataset.key] = s.value; });
    var shown = 0;
    rows.forEach(function (r) {
      var ok = (!f.target || r.dataset.target === f.target) &&
        (!f.kind || r.dataset.kind === f.kind) &&
        (!f.rule || has(r.dataset.rules, f.rule)) &&
        (!f.action || r.dataset.action === f.action);
      r.hidden = !ok;
      if (ok) { shown++; }
    });
    var narrowed = f.kind || f.rule || f.action;
    targets.forEach(function (t) {
      var ok = !f.target || t.dataset.target === f.target;
      if (ok && narrowed) {
        ok = t.querySelector("[data-filter]:not([hidden])") !== null;
      }
      t.hidden = !ok;
    });
    count.textContent = (f.target || narrowed) ? shown + " of " + rows.length + " rows shown" : "";
  }
  function view() {
    var v = form.querySelector("input[name=view]:checked");
    document.body.dataset.view = v ? v.value : "unified";
  }
  form.addEventListener("change", function () { apply(); view(); });
  form.addEventListener("reset", function () { setTimeout(function () { apply(); view(); }, 0); });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  apply();
  view();
}());
