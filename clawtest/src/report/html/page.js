// The HTML report's one behaviour: the failed/flaky filters over the task table and the task
// sections. Plain DOM, no library; the page reads whole without it.
(function () {
  "use strict";
  var buttons = document.querySelectorAll(".filters button[data-filter]");
  var items = document.querySelectorAll("[data-task-status]");
  function shown(item, filter) {
    if (filter === "failed") return item.getAttribute("data-task-status") !== "passed";
    if (filter === "flaky") return item.getAttribute("data-flaky") === "true";
    return true;
  }
  function count(filter) {
    var rows = document.querySelectorAll("tr[data-task-status]");
    var n = 0;
    for (var i = 0; i < rows.length; i++) if (shown(rows[i], filter)) n++;
    return n;
  }
  function apply(filter) {
    for (var i = 0; i < items.length; i++) items[i].hidden = !shown(items[i], filter);
    for (var j = 0; j < buttons.length; j++) {
      buttons[j].setAttribute("aria-pressed", String(buttons[j].getAttribute("data-filter") === filter));
    }
  }
  for (var k = 0; k < buttons.length; k++) {
    var button = buttons[k];
    var filter = button.getAttribute("data-filter");
    button.textContent = button.textContent + " (" + count(filter) + ")";
    button.addEventListener("click", function (event) { apply(event.currentTarget.getAttribute("data-filter")); });
  }
  document.body.setAttribute("data-filters-ready", "true");
})();
