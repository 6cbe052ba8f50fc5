// Sluice console: local times, copy on click, and the live stream.
"use strict";
(function () {
  // Times: <time datetime=ISO> shows the viewer's local time and its age.
  // The times are Redis's: ages count from Redis's time, which the page
  // carries as it was made (data-now), moved on by the viewer's clock,
  // which may be off from Redis's.
  var skew = document.body.dataset.now ? Number(document.body.dataset.now) - Date.now() : 0;
  function ago(d) { return age(Date.now() + skew - d.getTime()); }
  function age(ms) {
    var s = Math.round(Math.abs(ms) / 1000), out;
    if (s < 60) out = s + "s";
    else if (s < 3600) out = Math.floor(s / 60) + "m";
    else if (s < 86400) out = Math.floor(s / 3600) + "h" + (Math.floor(s / 60) % 60 ? " " + Math.floor(s / 60) % 60 + "m" : "");
    else out = Math.floor(s / 86400) + "d";
    return ms >= 0 ? out + " ago" : "in " + out;
  }
  function pad(n) { return n < 10 ? "0" + n : "" + n; }
  function local(d) {
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }
  function times(root) {
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) return;
      t.title = t.getAttribute("datetime");
      t.textContent = local(d);
      var rel = document.createElement("span");
      rel.className = "rel";
      rel.textContent = ago(d);
      t.appendChild(rel);
      t.classList.add("copy");
      t.dataset.copy = t.getAttribute("datetime");
    });
  }
  function ticking() {
    document.querySelectorAll("time[datetime] .rel").forEach(function (r) {
      var d = new Date(r.parentNode.getAttribute("datetime"));
      r.textContent = ago(d);
    });
  }
  // Copy: any element with data-copy copies its value when clicked.
  document.addEventListener("click", function (e) {
    var el = e.target.closest("[data-copy]");
    if (!el || !navigator.clipboard || e.target.closest("a")) return;
    navigator.clipboard.writeText(el.dataset.copy).then(function () {
      el.classList.add("copied");
      setTimeout(function () { el.classList.remove("copied"); }, 1200);
    });
  });

  // Live stream: counts of the overview and the queue pages, the state of
  // the job page.
  var base = document.body.dataset.prefix || "";
  function spark(svg, series) {
    var max = 0;
    series.forEach(function (p) { max = Math.max(max, p[0], p[1]); });
    ["d", "f"].forEach(function (cls, k) {
      var pts = series.map(function (p, i) {
        var x = series.length > 1 ? i * 120 / (series.length - 1) : 0;
        var y = max > 0 ? 27 - p[k] * 26 / max : 27;
        return x.toFixed(1) + "," + y.toFixed(1);
      }).join(" ");
      var line = svg.querySelector("." + cls);
      if (line) line.setAttribute("points", pts);
    });
  }
  function overview(data) {
    data.queues.forEach(function (q) {
      if (!q.depth) return; // its counters could not be read: the page says why
      Object.keys(q.depth).forEach(function (s) {
        document.querySelectorAll('[data-count="' + CSS.escape(q.name + "/" + s) + '"]').forEach(function (el) {
          el.textContent = q.depth[s];
          var cell = el.closest("td");
          if (cell) cell.classList.toggle("zero", q.depth[s] === 0);
        });
      });
      document.querySelectorAll('[data-rate="' + CSS.escape(q.name) + '"]').forEach(function (el) {
        el.textContent = q.done + " / " + q.failed;
      });
      document.querySelectorAll('[data-paused="' + CSS.escape(q.name) + '"]').forEach(function (el) {
        el.hidden = q.paused === 0;
      });
      document.querySelectorAll('svg[data-spark="' + CSS.escape(q.name) + '"]').forEach(function (svg) { spark(svg, q.series || []); });
    });
    document.querySelectorAll("[data-workers]").forEach(function (el) { el.textContent = data.workers; });
  }
  // A job event says the job changed: the page fetches itself again and
  // swaps in the fresh content. The server sends only changes, so an event
  // that arrives during a fetch is kept (the latest one) and looked at once
  // the fetch is done: the page may have been read before that change.
  var refreshing = false, pending = null, source = null, retries = 0;
  function refreshJob(ev) {
    var live = document.getElementById("live");
    if (!live) return;
    if (refreshing) { pending = ev; return; }
    var d = JSON.parse(ev.data);
    // the creation time too: a job deleted and its ID given to a new one
    // between two polls may have the same state and counters
    if (live.dataset.state === d.State && live.dataset.fence === String(d.Fence) &&
        live.dataset.attempt === String(d.Attempt) && live.dataset.crash === String(d.CrashAttempt) &&
        live.dataset.created === String(new Date(d.Created).getTime())) return;
    refreshing = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.text().then(function (html) { return { status: r.status, html: html }; }); })
      .then(function (got) {
        var doc = new DOMParser().parseFromString(got.html, "text/html");
        var fresh = doc.getElementById("live");
        if (fresh) {
          // a note that the page is not live (unfollowed) stays with it
          var note = document.getElementById("unfollowed");
          live.replaceWith(fresh);
          if (note) fresh.prepend(note);
          times(fresh);
          // live only while the stream is open and follows the job: it may
          // have ended, or come back unfollowed, while the page was fetched
          var open = !!source && source.readyState === EventSource.OPEN && !note;
          fresh.querySelectorAll(".live-dot").forEach(function (d) { d.classList.toggle("on", open); });
        } else if (got.status === 404) {
          // the job is gone (deleted): the page shows the answer's message
          // instead of the job, and follows it no more
          var main = document.querySelector("main"), said = doc.querySelector("main");
          if (main && said) main.replaceWith(said);
          if (source) source.close();
          document.querySelectorAll(".live-dot").forEach(function (d) { d.classList.remove("on"); });
        } else {
          throw new Error("status " + got.status);
        }
        retries = 0;
      })
      .catch(function () {
        // another answer (a proxy's 502, a restart) or no answer: no event
        // may follow (the change was the job's last), so the page asks
        // again, a few times, then says it is not live
        if (retries < 5) {
          retries++;
          setTimeout(function () { refreshJob(ev); }, 2000);
        } else {
          document.querySelectorAll(".live-dot").forEach(function (d) { d.classList.remove("on"); });
        }
      })
      .finally(function () {
        refreshing = false;
        var next = pending;
        pending = null;
        if (next) refreshJob(next);
      });
  }
  function stream() {
    if (!window.EventSource || !document.querySelector("[data-live]")) return;
    var job = document.body.dataset.job;
    var src = new EventSource(base + "/events" + (job ? "?job=" + encodeURIComponent(job) : ""));
    source = src;
    // the dot is looked up each time: refreshJob replaces it with #live
    function dot(on) {
      var d = document.querySelector(".live-dot");
      if (d) d.classList.toggle("on", on);
    }
    src.addEventListener("open", function () { dot(true); });
    src.addEventListener("error", function () { dot(false); });
    src.addEventListener("overview", function (ev) { overview(JSON.parse(ev.data)); });
    src.addEventListener("job", function (ev) {
      // the stream sends job events only while it follows the job: one
      // after the note below (a reconnect that found room) makes the page
      // live again
      var note = document.getElementById("unfollowed");
      if (note) {
        note.remove();
        document.querySelectorAll("#live .live-dot").forEach(function (d) { d.classList.add("on"); });
      }
      refreshJob(ev);
    });
    src.addEventListener("unfollowed", function (ev) {
      // the console follows so many jobs at once: this page is not live
      var live = document.getElementById("live");
      if (live && !document.getElementById("unfollowed")) {
        var note = document.createElement("div");
        note.id = "unfollowed";
        note.className = "flash";
        note.setAttribute("role", "status");
        note.textContent = "This page is not live: the console follows " + ev.data + " jobs at once already. Reload it later to see changes.";
        live.prepend(note);
      }
      document.querySelectorAll("#live .live-dot").forEach(function (d) { d.classList.remove("on"); });
    });
  }
  times(document);
  setInterval(ticking, 15000);
  stream();
})();
