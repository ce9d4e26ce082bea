// Uploads that say how far they are: a file over the upload limit is refused
// before a byte is sent, and a large one shows the bytes sent while it goes.
// Forms marked data-upload (with data-max-bytes) only; without XHR the form
// posts as usual.
(function () {
  "use strict";

  function humanSize(bytes) {
    var units = ["bytes", "KB", "MB", "GB"];
    var i = 0;
    while (bytes >= 1024 && i < units.length - 1) { bytes /= 1024; i += 1; }
    return i === 0 ? bytes + " bytes" : bytes.toFixed(1) + " " + units[i];
  }

  function say(form, text, kind) {
    var status = form.querySelector("[data-upload-status]");
    if (!status) return;
    status.hidden = false;
    status.className = "notice " + kind;
    status.textContent = text;
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-upload]")) return;
    var limit = Number(form.getAttribute("data-max-bytes") || 0);
    var files = [];
    form.querySelectorAll("input[type=file]").forEach(function (input) {
      for (var i = 0; i < input.files.length; i += 1) files.push(input.files[i]);
    });
    for (var j = 0; j < files.length; j += 1) {
      if (limit && files[j].size > limit) {
        event.preventDefault();
        say(form, files[j].name + " is " + humanSize(files[j].size) + ", larger than the upload " +
          "limit of " + humanSize(limit) + ": nothing was sent.", "error");
        return;
      }
    }
    if (!files.length || !window.FormData || !window.XMLHttpRequest) return;
    event.preventDefault();
    var total = files.reduce(function (sum, f) { return sum + f.size; }, 0);
    var bar = form.querySelector("[data-upload-bar]");
    var button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    if (bar) bar.hidden = false;
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.getAttribute("action") || window.location.href);
    xhr.upload.onprogress = function (e) {
      var sent = e.lengthComputable ? e.loaded : 0;
      var whole = e.lengthComputable ? e.total : total;
      var percent = whole ? Math.min(100, Math.round((100 * sent) / whole)) : 0;
      if (bar) {
        bar.setAttribute("aria-valuenow", String(percent));
        bar.firstElementChild.style.width = percent + "%";
      }
      say(form, "Sending: " + humanSize(sent) + " of " + humanSize(whole) + " (" + percent + " %)", "ok");
    };
    xhr.upload.onload = function () {
      say(form, "Sent. Reading the file to preview it (nothing is stored yet)…", "ok");
    };
    xhr.onerror = function () {
      if (button) button.disabled = false;
      say(form, "The upload broke off (the network or the server): nothing was stored. Try again.", "error");
    };
    xhr.onload = function () {
      // the answer is the next page (the preview) or this form with its errors
      if (xhr.responseURL) window.history.replaceState(null, "", xhr.responseURL);
      document.open();
      document.write(xhr.responseText);
      document.close();
    };
    xhr.send(new FormData(form));
  });
})();
