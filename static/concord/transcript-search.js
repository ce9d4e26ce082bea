// The transcript search that the console's document viewer and the raters'
// item pages share: every match of the box's text (2 characters or more) is
// highlighted inside the #turns panel, and step(+1 / -1) moves to the next or
// previous one, scrolling the panel (not the page). Each page wires its keys.
window.concordTranscriptSearch = function (turns, search, count) {
  "use strict";
  const spans = Array.prototype.slice.call(turns.querySelectorAll(".said"));
  const texts = spans.map(function (span) { return span.textContent; });
  let marks = [];
  let current = -1;
  let timer = null;
  let lastQuery = "";

  function highlight() {
    const query = search.value.trim();
    lastQuery = query;
    marks = [];
    current = -1;
    const pattern = query.length >= 2
      ? new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi") : null;
    spans.forEach(function (span, index) {
      const text = texts[index];
      if (!pattern || !pattern.test(text)) {
        if (span.childElementCount) span.textContent = text;
        return;
      }
      pattern.lastIndex = 0;
      const fragment = document.createDocumentFragment();
      let at = 0;
      let match;
      while ((match = pattern.exec(text)) !== null) {
        fragment.appendChild(document.createTextNode(text.slice(at, match.index)));
        const mark = document.createElement("mark");
        mark.textContent = match[0];
        fragment.appendChild(mark);
        marks.push(mark);
        at = match.index + match[0].length;
      }
      fragment.appendChild(document.createTextNode(text.slice(at)));
      span.replaceChildren(fragment);
    });
    count.textContent = !pattern ? "" : marks.length ? marks.length + " found" : "not found";
    if (marks.length) jump(1);
  }

  function jump(direction) {
    if (!marks.length) return;
    if (current >= 0) marks[current].classList.remove("current");
    current = (current + direction + marks.length) % marks.length;
    const mark = marks[current];
    mark.classList.add("current");
    count.textContent = (current + 1) + " of " + marks.length;
    const box = turns.getBoundingClientRect();
    turns.scrollTop += mark.getBoundingClientRect().top - box.top - box.height / 3;
  }

  function step(direction) {
    clearTimeout(timer);
    if (search.value.trim() !== lastQuery || !marks.length) highlight();
    else jump(direction);
  }

  search.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(highlight, 150);
  });
  return step;
};
