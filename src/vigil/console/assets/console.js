// Vigil console: keeps countdowns running and the live part of a page fresh, without reloads.
"use strict";

(function () {
  var skew = 0; // server time minus this browser's time, from the page's data-now

  function span(seconds) {
    var whole = Math.floor(Math.abs(seconds));
    var d = Math.floor(whole / 86400), h = Math.floor((whole % 86400) / 3600);
    var m = Math.floor((whole % 3600) / 60), s = whole % 60;
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + m + " min";
    if (m) return m + " min " + s + " s";
    return s + " s";
  }

  function tick() {
    var now = Date.now() + skew;
    document.querySelectorAll(".countdown[data-deadline]").forEach(function (el) {
      var left = (Date.parse(el.getAttribute("data-deadline")) - now) / 1000;
      el.textContent = left > 0 ? "in " + span(left) : "due " + span(left) + " ago";
      el.classList.toggle("due", left <= 0);
    });
  }

  // A text with a limit in bytes (data-limit) shows how much of it is used as it is typed:
  // the browser never cuts it, and the server refuses one over the limit, saying why.
  function usage(field) {
    var shown = document.querySelector('[data-usage-of="' + field.id + '"]');
    if (!shown) return;
    var limit = parseInt(field.getAttribute("data-limit"), 10);
    var used = new TextEncoder().encode(field.value).length;
    shown.textContent = used > limit
      ? (used - limit) + " bytes over the limit: it would be refused."
      : used + " of " + limit + " bytes used.";
    shown.classList.toggle("over", used > limit);
  }

  function refresh(live) {
    var url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    live.setAttribute("aria-busy", "true");
    fetch(url.toString(), { credentials: "same-origin", headers: { accept: "text/html" } })
      .then(function (response) {
        if (response.status === 401) {
          var back = window.location.pathname + window.location.search;
          window.location.assign("/console/sign-in?next=" + encodeURIComponent(back));
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== live.innerHTML) {
          live.innerHTML = html;
          live.setAttribute("data-refreshed", String(Date.now()));
          tick();
        }
      })
      .catch(function () { /* offline for a moment: the next round tries again */ })
      .finally(function () { live.setAttribute("aria-busy", "false"); });
  }

  // A deadline that has just passed (or is about to) is when a switch fires: the page asks
  // again every two seconds around it, and at its own pace otherwise.
  function dueNow() {
    var now = Date.now() + skew;
    return Array.prototype.some.call(
      document.querySelectorAll(".countdown[data-deadline]"),
      function (el) {
        var left = (Date.parse(el.getAttribute("data-deadline")) - now) / 1000;
        return left < 2 && left > -20;
      }
    );
  }

  function loop(live, every) {
    window.setTimeout(function () {
      if (!document.hidden) refresh(live);
      loop(live, every);
    }, dueNow() ? Math.min(every, 2000) : every);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var now = Date.parse(document.body.getAttribute("data-now") || "");
    if (!isNaN(now)) skew = now - Date.now();
    tick();
    window.setInterval(tick, 1000);
    document.querySelectorAll("textarea[data-limit]").forEach(function (field) {
      usage(field);
      field.addEventListener("input", function () { usage(field); });
    });
    var live = document.getElementById("live");
    if (live && live.hasAttribute("data-refresh")) {
      loop(live, parseInt(live.getAttribute("data-refresh"), 10) || 5000);
    }
  });
})();
