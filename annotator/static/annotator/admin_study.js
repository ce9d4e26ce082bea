// Study add page: choosing the dataset reloads the page with ?dataset=ID so that
// the meetings picker lists only that dataset's meetings (the form says which).
window.addEventListener("load", function () {
  "use strict";
  var jq = window.django && window.django.jQuery;
  if (!jq || !/\/add\/$/.test(window.location.pathname)) return;
  jq("#id_dataset").on("change", function () {
    var url = new URL(window.location.href);
    if (url.searchParams.get("dataset") === this.value) return;
    url.searchParams.set("dataset", this.value);
    window.location.href = url.toString();
  });
});
