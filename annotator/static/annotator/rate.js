// The rating page. Rubric items: keys 1-9 and 0 (=10 on a 10-point scale) rate
// and save at once. Pairwise items: a / t / b (or 1 / 2 / 3) choose A, tie or B
// and save at once. Enter or the right arrow goes on, the left arrow goes back.
// A comment and a flag can be saved with the rating or alone (never moving on).
// Without JavaScript the form still works: the Next button posts everything.
(function () {
  "use strict";
  const form = document.getElementById("rating-form");
  if (!form) return;
  const status = document.getElementById("status");
  const back = document.getElementById("back");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const field = form.dataset.mode === "choice" ? "choice" : "score";
  const practice = form.dataset.practice === "1";
  const comment = document.getElementById("comment");
  const noteBox = document.getElementById("note-box");
  const noteState = document.getElementById("note-state");
  const noteStatus = document.getElementById("note-status");
  const CHOICE_NAMES = {A: "A is better", B: "B is better", tie: "Tie"};
  const CHOICE_KEYS = {a: "A", b: "B", t: "tie", 1: "A", 2: "tie", 3: "B"};

  let lastMark = performance.now();
  let pending = Promise.resolve(true);
  let nextUrl = form.dataset.next;
  let locked = practice && !document.getElementById("feedback").hidden;
  // What the server holds (not what the page shows: a choice clicked before this
  // script ran, or one the browser restored, is not saved yet; see the end).
  let saved = {value: form.dataset.saved || null, comment: comment ? comment.value : "", flag: flagValue()};

  function chosenValue() {
    const radio = form.querySelector("input[name=" + field + "]:checked");
    return radio ? radio.value : null;
  }

  function flagValue() {
    const radio = form.querySelector("input[name=flag]:checked");
    return radio ? radio.value : "";
  }

  function describe(value) {
    return field === "choice" ? (CHOICE_NAMES[value] || value) : String(value);
  }

  function elapsedSeconds() {
    const now = performance.now();
    const seconds = (now - lastMark) / 1000;
    lastMark = now;
    return seconds.toFixed(3);
  }

  function focusForm() {
    form.focus({preventScroll: true});
  }

  function showNoteState() {
    if (!noteState) return;
    const parts = [];
    if (saved.comment) parts.push("comment");
    if (saved.flag) parts.push("report");
    noteState.textContent = parts.length ? parts.join(" and ") + " saved" : "";
  }

  function notesChanged() {
    return comment && (comment.value.trim() !== saved.comment.trim() || flagValue() !== saved.flag);
  }

  function showFeedback(data) {
    const box = document.getElementById("feedback");
    if (!box || data.practice_ok === null || data.practice_ok === undefined) return;
    const low = form.dataset.expectedMin, high = form.dataset.expectedMax;
    document.getElementById("verdict").textContent = data.practice_ok
      ? "Well done: your rating is within the expected range (" + low + " to " + high + ")."
      : "The expected rating was " + low + " to " + high + ".";
    if (data.feedback) document.getElementById("feedback-text").textContent = data.feedback;
    box.classList.toggle("ok", !!data.practice_ok);
    box.classList.toggle("off", !data.practice_ok);
    box.hidden = false;
    // The practice rating is given once: the feedback is about it. Enter goes on.
    locked = true;
    form.querySelector("fieldset.scale").disabled = true;
    status.textContent = "Saved: " + data.score + ". Press Enter or Next to go on.";
    focusForm();
  }

  // One POST with everything the page holds now: the rating (when given), the
  // comment and the flag. Posts are chained, so they reach the server in order.
  function post(seconds, attempt) {
    const value = chosenValue();
    const body = new FormData();
    body.append("csrfmiddlewaretoken", csrf);
    if (value !== null) body.append(field, value);
    body.append("seconds", seconds);
    const sentComment = comment ? comment.value : null;
    const sentFlag = comment ? flagValue() : null;
    if (comment) {
      body.append("comment", sentComment);
      body.append("flag", sentFlag);
    }
    return fetch(window.location.pathname, {
      method: "POST", body: body, credentials: "same-origin",
      headers: {"Accept": "application/json", "X-CSRFToken": csrf},
    }).then(function (answer) {
      return answer.json().then(function (data) {
        if (!answer.ok) throw new Error(data.error || "not saved");
        const now = data[field];
        saved.value = now === null || now === undefined ? null : String(now);
        if (comment) {
          saved.comment = (data.comment || "").replace(/\r\n/g, "\n");  // forms send CRLF
          saved.flag = data.flag || "";
          showNoteState();
        }
        if (data.next) nextUrl = data.next;
        if (data.qualification === "failed") {
          window.location.href = data.next;
          return false;
        }
        status.textContent = "Saved: " + describe(now);
        status.classList.remove("error");
        showFeedback(data);
        return true;
      });
    }).catch(function (error) {
      // A network failure is retried: a rating is never dropped silently.
      if (attempt < 5 && error instanceof TypeError) {  // fetch: network failure
        status.textContent = "Not saved yet, retrying…";
        return new Promise(function (resolve) { setTimeout(resolve, 500 * 2 ** attempt); })
          .then(function () { return post(0, attempt + 1); });
      }
      status.textContent = "Not saved: " + error.message;
      status.classList.add("error");
      return false;
    });
  }

  function queueSave() {
    const seconds = elapsedSeconds();
    pending = pending.then(function () { return post(seconds, 0); });
    return pending;
  }

  function rate(value) {
    if (locked) return;
    const radio = form.querySelector("input[name=" + field + "][value='" + value + "']");
    if (!radio) return;
    radio.checked = true;
    status.textContent = "Saving " + describe(value) + "…";
    status.classList.remove("error");
    queueSave();
  }

  function saveNotes() {
    if (!comment) return;
    if (chosenValue() === null) {
      noteStatus.textContent = field === "choice"
        ? "Choose A, B or tie first: your comment is saved with it."
        : "Choose a score first: your comment is saved with it.";
      return;
    }
    noteStatus.textContent = "Saving…";
    queueSave().then(function (ok) {
      noteStatus.textContent = ok ? "Saved." : "Not saved, see above.";
    });
  }

  function goNext() {
    if (locked) {
      pending.then(function (ok) { if (ok) window.location.href = nextUrl; });
      return;
    }
    const value = chosenValue();
    if (value === null) {
      status.textContent = field === "choice"
        ? "Choose first: A is better (a), tie (t) or B is better (b)."
        : "Choose a score first (keys " + (form.dataset.scaleMax === "10" ? "1-9, 0 for 10" : "1-" + form.dataset.scaleMax) + ").";
      status.classList.add("error");
      return;
    }
    // Unsaved changes go with it; else one more post counts the time spent reading.
    if (value !== saved.value || notesChanged() || performance.now() - lastMark > 500) {
      queueSave();
    }
    pending.then(function (ok) { if (ok) window.location.href = nextUrl; });
  }

  function isTyping(element) {
    if (!element || !element.tagName) return false;
    if (element.isContentEditable) return true;
    const tag = element.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT") return true;
    return tag === "INPUT" && !/^(radio|checkbox|button|submit|reset)$/i.test(element.type);
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === field) rate(event.target.value);
    else if (event.target.name === "flag") saveNotes();
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    goNext();
  });
  const saveNote = document.getElementById("save-note");
  if (saveNote) {
    saveNote.addEventListener("click", function () {
      saveNotes();
      focusForm();  // Enter goes on again
    });
  }
  if (comment) {
    comment.addEventListener("input", function () { noteStatus.textContent = ""; });
    comment.addEventListener("keydown", function (event) {
      if (event.key === "Escape") {
        event.preventDefault();
        focusForm();
      } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        saveNotes();
      }
    });
  }

  // A <summary> clicked with the mouse keeps the focus, and Enter would toggle it
  // again instead of going on: after a toggle by the user, the focus goes back to
  // the form (or into the comment box when it was just opened).
  document.querySelectorAll("details").forEach(function (details) {
    details.addEventListener("toggle", function () {
      const summary = details.querySelector("summary");
      if (document.activeElement !== summary) return;  // opened by the page, not the user
      if (details === noteBox && details.open) comment.focus();
      else focusForm();
    });
  });

  // Enter on a <summary> reached with Tab toggles it; on one last clicked with
  // the mouse (before the toggle above moved the focus) it goes on.
  let clickedSummary = null;
  document.addEventListener("pointerdown", function (event) {
    clickedSummary = event.target.closest ? event.target.closest("summary") : null;
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Tab") clickedSummary = null;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (isTyping(event.target)) return;  // the comment box, the transcript search
    const tag = event.target.tagName;
    const ownEnter = tag === "A" || (tag === "BUTTON" && event.target.id !== "next")
      || (tag === "SUMMARY" && event.target !== clickedSummary);
    if (event.key === "Enter" && ownEnter) return;  // its own action
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (field === "choice" && Object.prototype.hasOwnProperty.call(CHOICE_KEYS, key)) {
      event.preventDefault();
      rate(CHOICE_KEYS[key]);
    } else if (field === "score" && /^[0-9]$/.test(key)) {
      event.preventDefault();
      rate(key === "0" ? "10" : key);
    } else if (key === "Enter" || key === "ArrowRight") {
      event.preventDefault();
      goNext();
    } else if (key === "ArrowLeft" && back) {
      event.preventDefault();
      pending.then(function () { window.location.href = back.href; });
    }
  });

  // The meeting transcript: highlight what the search box holds, Enter (or Next)
  // jumps to the next match inside the panel, Shift+Enter to the previous one.
  const search = document.getElementById("transcript-search");
  const turns = document.getElementById("turns");
  if (search && turns) {
    // static/concord/transcript-search.js, loaded before this script
    const findNext = window.concordTranscriptSearch(
      turns, search, document.getElementById("search-count"));

    search.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault();
        findNext(event.shiftKey ? -1 : 1);
      } else if (event.key === "Escape") {
        event.preventDefault();
        focusForm();
      }
    });
    document.getElementById("search-next").addEventListener("click", function () {
      findNext(1);
    });
  }
  // A score chosen before this script ran (a slow page: the transcript comes
  // first) or restored by the browser is saved now, as a click on it would be.
  if (!locked && chosenValue() !== null && chosenValue() !== saved.value) {
    status.textContent = "Saving " + describe(chosenValue()) + "…";
    queueSave();
  }
})();
