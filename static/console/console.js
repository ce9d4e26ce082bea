// The console's few behaviours: copy buttons, the keys of the transcript
// search (static/concord/transcript-search.js), and the question links of the document viewer. The live parts
// (progress, the QC table, workers) are htmx attributes in the templates.
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const field = document.querySelector(button.getAttribute("data-copy"));
    if (!field) return;
    const done = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () {
        field.select(); document.execCommand("copy"); done();
      });
    } else {
      field.select(); document.execCommand("copy"); done();
    }
  });

  // An action the server refuses (a viewer's 403, a 400 or 500): htmx swaps
  // nothing on an error answer, so the page says why instead of doing nothing.
  document.addEventListener("htmx:responseError", function (event) {
    const config = event.detail.requestConfig || {};
    if ((config.verb || "").toLowerCase() === "get") return;  // a live refresh: the next one retries
    const xhr = event.detail.xhr;
    let reason = "";
    try {
      const answer = new DOMParser().parseFromString(xhr.responseText, "text/html");
      const found = answer.getElementById("reason") || answer.querySelector("h1");
      reason = found ? found.textContent.trim() : "";
    } catch (error) { reason = ""; }
    if (!reason) reason = (xhr.responseText || "").slice(0, 300).trim() || "the server answered " + xhr.status + ".";
    let note = document.getElementById("action-refused");
    if (!note) {
      note = document.createElement("p");
      note.id = "action-refused";
      note.className = "notice error";
      note.setAttribute("role", "alert");
      const main = document.getElementById("main");
      main.insertBefore(note, main.firstChild);
    }
    note.textContent = "Not done: " + reason;
  });

  function ready(fn) {
    if (document.readyState !== "loading") fn(); else document.addEventListener("DOMContentLoaded", fn);
  }

  ready(function () {
    const turns = document.getElementById("turns");
    const search = document.getElementById("transcript-search");
    if (!turns || !search) return;

    // Questions: a link to the passage marks its turns and scrolls the transcript to it.
    function show(first, last, target) {
      turns.querySelectorAll(".turn.answer").forEach(function (el) { el.classList.remove("answer"); });
      for (let i = first; i <= last; i++) {
        const el = document.getElementById("turn-" + i);
        if (el) el.classList.add("answer");
      }
      const el = document.getElementById(target);
      if (!el) return;
      el.classList.remove("target");
      void el.offsetWidth;  // restart the highlight animation
      el.classList.add("target");
      const box = turns.getBoundingClientRect();
      turns.scrollTop += el.getBoundingClientRect().top - box.top - 12;
      if (window.matchMedia("(max-width: 62rem)").matches) turns.scrollIntoView({ block: "start" });
    }
    document.addEventListener("click", function (event) {
      const link = event.target.closest("a.passage-link, a.third-link");
      if (!link) return;
      event.preventDefault();
      const target = link.getAttribute("href").slice(1);
      const index = parseInt(target.split("-")[1], 10);
      const first = link.dataset.first ? parseInt(link.dataset.first, 10) : index;
      const last = link.dataset.last ? parseInt(link.dataset.last, 10) : (link.classList.contains("third-link") ? index - 1 : index);
      show(first, last, target);
      history.replaceState(null, "", "#" + target);
    });

    // Search: highlight every match, step with Enter / Shift+Enter or the buttons.
    const step = window.concordTranscriptSearch(
      turns, search, document.getElementById("search-count"));
    search.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault();
        step(event.shiftKey ? -1 : 1);
      }
    });
    document.getElementById("search-next").addEventListener("click", function () { step(1); });
    const previous = document.getElementById("search-prev");
    if (previous) previous.addEventListener("click", function () { step(-1); });

    if (location.hash.indexOf("#turn-") === 0) {
      const index = parseInt(location.hash.split("-")[1], 10);
      show(index, index, location.hash.slice(1));
    }
  });
})();
