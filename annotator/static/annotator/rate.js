// The rating page: keys 1-9 and 0 (=10) rate and save at once, Enter or the
// right arrow goes on, the left arrow goes back. Without JavaScript the form
// still works: the Next button posts the chosen score.
(function () {
  "use strict";
  const form = document.getElementById("rating-form");
  if (!form) return;
  const status = document.getElementById("status");
  const back = document.getElementById("back");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  let lastMark = performance.now();
  let pending = Promise.resolve(true);
  let savedScore = (form.querySelector("input[name=score]:checked") || {}).value || null;

  function elapsedSeconds() {
    const now = performance.now();
    const seconds = (now - lastMark) / 1000;
    lastMark = now;
    return seconds.toFixed(3);
  }

  function post(score, seconds, attempt) {
    const body = new FormData();
    body.append("csrfmiddlewaretoken", csrf);
    body.append("score", score);
    body.append("seconds", seconds);
    return fetch(window.location.pathname, {
      method: "POST", body: body, credentials: "same-origin",
      headers: {"Accept": "application/json", "X-CSRFToken": csrf},
    }).then(function (answer) {
      return answer.json().then(function (data) {
        if (!answer.ok) throw new Error(data.error || "not saved");
        savedScore = String(data.score);
        status.textContent = "Saved: " + data.score;
        status.classList.remove("error");
        return true;
      });
    }).catch(function (error) {
      // A network failure is retried: a rating is never dropped silently.
      if (attempt < 5 && error instanceof TypeError) {  // fetch: network failure
        status.textContent = "Not saved yet, retrying…";
        return new Promise(function (resolve) { setTimeout(resolve, 500 * 2 ** attempt); })
          .then(function () { return post(score, 0, attempt + 1); });
      }
      status.textContent = "Not saved: " + error.message;
      status.classList.add("error");
      return false;
    });
  }

  function rate(score) {
    const radio = form.querySelector("input[name=score][value='" + score + "']");
    if (!radio) return;
    radio.checked = true;
    status.textContent = "Saving " + score + "…";
    const seconds = elapsedSeconds();
    pending = pending.then(function () { return post(score, seconds, 0); });
  }

  function goNext() {
    const chosen = form.querySelector("input[name=score]:checked");
    if (!chosen) {
      status.textContent = "Choose a score first (keys 1-9, 0 for 10).";
      status.classList.add("error");
      return;
    }
    if (chosen.value !== savedScore) rate(chosen.value);
    else {
      const seconds = elapsedSeconds();
      if (parseFloat(seconds) > 0.5) pending = pending.then(function () { return post(chosen.value, seconds, 0); });
    }
    pending.then(function (ok) { if (ok) window.location.href = form.dataset.next; });
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "score") rate(event.target.value);
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    goNext();
  });
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.tagName === "SUMMARY" && event.key === "Enter") return;
    if (/^[0-9]$/.test(event.key)) {
      event.preventDefault();
      rate(event.key === "0" ? "10" : event.key);
    } else if (event.key === "Enter" || event.key === "ArrowRight") {
      event.preventDefault();
      goNext();
    } else if (event.key === "ArrowLeft" && back) {
      event.preventDefault();
      pending.then(function () { window.location.href = back.href; });
    }
  });
})();
