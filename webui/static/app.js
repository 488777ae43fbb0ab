// anamnesis ui: the little the pages need beyond HTML. Everything works
// without it; it only saves clicks.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Filters apply with their button (or Enter), never on "change": one
  // ArrowDown in a focused select fires it, which reloaded the page.
  // The fleet page reloads once its background checks are done.
  if (document.querySelector("[data-reload-while-checking]")) {
    setTimeout(function () { location.reload(); }, 1500);
  }
  // Ctrl/Cmd+Enter saves an editor form.
  document.querySelectorAll("form textarea").forEach(function (ta) {
    ta.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { ta.form.requestSubmit(); }
    });
  });
  // "/" focuses search, as on most sites.
  document.addEventListener("keydown", function (e) {
    var q = document.querySelector("input[name=q]");
    if (e.key === "/" && q && document.activeElement.tagName !== "INPUT" && document.activeElement.tagName !== "TEXTAREA") {
      e.preventDefault(); q.focus();
    }
  });
});
