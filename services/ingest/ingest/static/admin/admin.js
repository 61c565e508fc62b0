/* Sticker Booth admin page over the /admin/* JSON API (services/ingest/ingest/api/admin_jobs.py,
 * admin_leads.py): the evening's overview row (shared/overview.py), the queue with Pause/Resume, the job
 * list with search and keyset paging, a job page (#/jobs/<id>) with its timeline, stickers, contact sheet,
 * provider calls, Retry and Resend link, the leads with a CSV export, and the events (admin_events.py) with
 * a form to create or edit one and a link to each event's report; the overview's events of today, each in
 * its own local day (issue 23). Each sticker shows its likeness
 * to the guest (issue 20: the face-descriptor distance, or why there is none), marked when it is over the
 * answer's likeness_bound or its face is missing.
 * The token is asked for once and kept in sessionStorage (this tab only). Every value from the server is
 * put on the page as text, never as HTML: guest names, lead names and messages come from strangers.
 * Guest images need the token, so they are fetched and shown as blob: URLs (the CSP allows img blob:).
 */
"use strict";

(() => {
  const TOKEN_KEY = "stickerBooth.adminToken";
  const REFRESH_MS = 5000;
  const PAGE_SIZE = 25;
  const $ = (id) => document.getElementById(id);
  let token = sessionStorage.getItem(TOKEN_KEY);
  let refreshTimer = null;
  // Job list: the search in force and the cursors of the pages seen (cursors[k] opens page k).
  // seq: the newest job-list request; an older answer that arrives after it (a periodic refresh of
  // page 1 still in flight when "older" is pressed) is dropped, not drawn over the newer page.
  const list = { q: "", status: "", cursors: [null], page: 0, seq: 0 };
  // The job page's images: fetched once per job, released when another job is opened.
  let shownImages = { jobId: null, urls: [] };

  class HttpError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function request(method, path, body) {
    let response;
    const headers = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const payload = body === undefined ? undefined : JSON.stringify(body);
    try {
      response = await fetch(path, { method, cache: "no-store", headers, body: payload });
    } catch (err) {
      $("offline").hidden = false;
      throw err;
    }
    $("offline").hidden = true;
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      const error = (body && body.error) || {};
      throw new HttpError(response.status, error.code || "", error.message || response.statusText);
    }
    return response;
  }

  const api = async (method, path, body) => (await request(method, path, body)).json();
  const blobUrl = async (path) => URL.createObjectURL(await (await request("GET", path)).blob());

  function accessProblem(err) {
    if (!(err instanceof HttpError)) return null;
    if (err.status === 401) return "That token is not right.";
    if (err.status === 403) return "The admin page is off on this server: set ADMIN_TOKEN for the ingest service.";
    return null;
  }

  /* ---- Sign in / out. ---- */

  function showLogin(message = "") {
    clearTimeout(refreshTimer);
    $("dashboard").hidden = true;
    $("sign-out").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message;
    $("token").value = "";
    $("token").focus();
  }

  function signOut(message = "") {
    token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(message);
  }

  async function signIn(event) {
    event.preventDefault();
    token = $("token").value.trim();
    if (!token) return;
    try {
      await api("GET", "/admin/status");
    } catch (err) {
      token = null;
      $("login-error").textContent = accessProblem(err) ?? `Could not reach the server (${err.message}).`;
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    $("login").hidden = true;
    openDashboard();
  }

  function openDashboard() {
    $("dashboard").hidden = false;
    $("sign-out").hidden = false;
    refresh();
  }

  /* ---- Routing: #/ is the lists, #/jobs/<id> a job's page. ---- */

  function routeJobId() {
    const match = /^#\/jobs\/([0-9a-f-]{36})$/.exec(location.hash);
    return match ? match[1] : null;
  }

  /* ---- Refresh loop. ---- */

  async function refresh() {
    clearTimeout(refreshTimer);
    const jobId = routeJobId();
    $("home-view").hidden = Boolean(jobId);
    $("overview").hidden = Boolean(jobId); // a job's page starts at the job
    $("job-detail").hidden = !jobId;
    try {
      const overview = api("GET", "/admin/overview");
      const work = jobId ? [showJob(jobId)] : [loadJobs(), loadLeads(), loadPreflight(), loadEvents()];
      renderOverview(await overview);
      await Promise.all(work);
      $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      const problem = accessProblem(err);
      if (problem) return signOut(problem);
    }
    clearTimeout(refreshTimer); // a refresh started meanwhile (an action, a search) set one too
    refreshTimer = setTimeout(refresh, REFRESH_MS);
  }

  /* ---- The last full preflight (GET /admin/preflight): verdict, age, what failed or warned. ---- */

  async function loadPreflight() {
    const { report, age_s: age } = await api("GET", "/admin/preflight");
    const list = $("preflight-problems");
    list.replaceChildren();
    if (!report) {
      $("preflight-verdict").textContent = "not run yet";
      $("preflight-sub").textContent = "make preflight, or /preflight in the bot";
      return;
    }
    $("preflight-verdict").textContent = report.ok ? "Ready" : "Not ready";
    $("preflight-sub").textContent = `${duration(age)} ago (${report.source})`;
    for (const r of report.results.filter((c) => c.status === "fail" || c.status === "warn")) {
      const item = document.createElement("li");
      item.textContent = `${r.status === "fail" ? "✗" : "!"} ${r.name}: ${r.detail}` + (r.fix ? ` → ${r.fix}` : "");
      list.append(item);
    }
  }

  async function act(button, method, path, done) {
    $("action-error").textContent = "";
    $("detail-done").textContent = "";
    delete $("detail-done").dataset.whileQueued;
    if (button) button.disabled = true;
    try {
      const body = await api(method, path);
      if (done) $("detail-done").textContent = done(body);
    } catch (err) {
      const problem = accessProblem(err);
      if (problem) return signOut(problem);
      $("action-error").textContent = err.message || String(err);
    } finally {
      if (button) button.disabled = false;
    }
    await refresh();
  }

  /* ---- Formatting. ---- */

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  const cell = (text, className) => el("td", text ?? "—", className);

  function pill(text, kind) {
    return el("span", text, `pill ${kind}`);
  }

  function age(iso) {
    const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 60) return `${Math.floor(s)} s ago`;
    if (s < 3600) return `${Math.floor(s / 60)} min ago`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
    return `${Math.floor(s / 86400)} d ago`;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    if (seconds < 90) return `${Math.round(seconds)} s`;
    return `${Math.floor(seconds / 60)} min ${String(Math.round(seconds % 60)).padStart(2, "0")} s`;
  }

  const usd = (value) => `$${Number(value).toFixed(2)}`;
  const percent = (share) => `${Math.round(share * 100)}%`;

  // Why a sticker has no likeness distance (the worker's likeness_reason codes; not_scored: stored before
  // likeness existed). An unknown code is shown as it is.
  const LIKENESS_REASONS = {
    no_face_found: "no face found",
    eyes_hidden: "eyes hidden, not judged",
    no_selfie_face: "no face in the selfie",
    scorer_unavailable: "scorer unavailable",
    not_scored: "not scored",
  };

  /* A sticker's likeness for its caption: text, tooltip and a mark. "over" when the distance is over the
   * bound (the worker's pack QA bound, shared/likeness.py), "missing" when the sticker has no face (pack
   * QA regenerates both, issue 20 item 4); distances at two decimals, three when two would read as the
   * bound itself. */
  function likenessOf(sticker, bound) {
    if (typeof sticker.likeness === "number") {
      let shown = sticker.likeness.toFixed(2);
      if (shown === bound.toFixed(2) && sticker.likeness !== bound) shown = sticker.likeness.toFixed(3);
      const over = sticker.likeness > bound;
      return {
        text: over ? `⚠ ${shown} > ${bound.toFixed(2)}` : shown,
        title: `likeness distance ${sticker.likeness} (0 = the guest's face; over ${bound} does not look like them)`,
        mark: over ? "over" : "",
      };
    }
    const reason = sticker.likeness_reason;
    const missing = reason === "no_face_found";
    return {
      text: `${missing ? "⚠ " : ""}${LIKENESS_REASONS[reason] || reason || "no likeness"}`,
      title: `no likeness distance${reason ? ` (${reason})` : ""}`,
      mark: missing ? "missing" : "none",
    };
  }

  function likenessSummary(job) {
    const marks = job.stickers.map((s) => likenessOf(s, job.likeness_bound).mark);
    const over = marks.filter((m) => m === "over").length;
    const missing = marks.filter((m) => m === "missing").length;
    const judged = job.stickers.filter((s) => typeof s.likeness === "number").length;
    const parts = [`likeness judged on ${judged} of ${job.stickers.length}`];
    if (over) parts.push(`${over} over the bound ${job.likeness_bound.toFixed(2)}`);
    if (missing) parts.push(`${missing} without a face`);
    return { text: `Likeness (distance to the guest's face, smaller is closer): ${parts.join(", ")}.`, flagged: over + missing > 0 };
  }

  // What each failure of a job means for staff (DESIGN.md §5); a retry cannot fix the first three.
  const FAILURES = {
    no_face: "No face in the photo. The guest was asked for another selfie; Retry would fail the same way.",
    content: "The AI providers refused this photo (safety filter). The guest was asked for a new selfie; Retry would only be refused again.",
    permanent: "The photo cannot be used (photo missing or unknown outfit); Retry would fail the same way.",
    invalid: "No usable stickers came back within the attempts (invalid or unreadable images). Retry may work.",
    timeout: "The AI providers did not answer in time. Retry may work.",
    internal: "A bug of ours: see the worker's log for this job. Retry may work.",
    crashed: "The worker processing it died. Retry may work.",
    deadline: "The guest's 15-minute deadline passed (often during a pause). Retry may work.",
    job_cost: "The job reached its cost ceiling (JOB_MAX_COST_USD). Retry starts a fresh ceiling.",
  };

  // Why the kiosk refused a photo (ingest.photo, POST /sessions/{id}/photo); nothing was stored.
  const REFUSALS = {
    no_face: "No face found in the photo: the guest was asked for another selfie.",
    corrupt_image: "The photo file was damaged or incomplete.",
    empty_file: "The upload was empty.",
    unsupported_format: "Not a JPEG, PNG, WebP or HEIC photo.",
    too_many_pixels: "The photo had too many pixels (MAX_UPLOAD_PIXELS).",
    file_too_large: "The photo was over MAX_UPLOAD_BYTES.",
    malformed_multipart: "The upload broke off or was malformed (often a weak network at the booth).",
  };

  function guestLabel(guest) {
    return guest && guest.name ? guest.name : "not linked";
  }

  function telegramLabel(guest) {
    if (!guest || !guest.user_id) return null;
    return guest.username ? `@${guest.username} · ${guest.user_id}` : String(guest.user_id);
  }

  function failurePill(job) {
    if (!job.failure) return null;
    const badge = pill(job.failure, `error-class class-${job.error_class}`);
    badge.title = FAILURES[job.failure] || job.error || "";
    return badge;
  }

  // "queued again" only while the job waits in the queue again; once it moved on (being made, delivered,
  // failed) a neutral "retried": the operator still sees it was requeued, but not that it is waiting.
  function requeuePill(job) {
    if (!job.requeues) return null;
    const times = job.requeues === 1 ? "once" : `${job.requeues} times`;
    const badge = job.queued_again ? pill("queued again", "warn requeue") : pill("retried", "requeue");
    badge.title = job.queued_again
      ? `Back in the queue (Retry or requeue, ${times}): a worker takes it in a moment.`
      : `Queued again ${times} (Retry or requeue) before this state.`;
    return badge;
  }

  /* ---- Overview row. ---- */

  function meter(label, value, share, title, kind = "") {
    const row = el("div", null, `meter ${kind}`);
    row.title = title || "";
    const head = el("div", null, "meter-head");
    head.append(el("span", label), el("span", value, "meter-value"));
    const bar = el("div", null, "bar");
    const fill = el("span");
    fill.style.width = `${Math.min(100, Math.round(share * 100))}%`;
    bar.append(fill);
    row.append(head, bar);
    return row;
  }

  function renderOverview(o) {
    renderQueue(o);
    $("guests").textContent = String(o.guests_last_hour);
    const t = o.time_to_link;
    $("link-times").textContent = t.count ? `${duration(t.p50_s)} · ${duration(t.p95_s)}` : "—";
    $("link-count").textContent = t.count
      ? `p50 · p95 of ${t.count} ${t.count === 1 ? "link" : "links"}, last hour`
      : "no links in the last hour";

    const failures = Object.entries(o.failures_today);
    $("failed-total").textContent = String(failures.reduce((sum, [, n]) => sum + n, 0));
    $("failures").replaceChildren(
      ...(failures.length
        ? failures.map(([label, n]) => {
            const chip = pill(`${label} ${n}`, `error-class class-${label}`);
            chip.title = FAILURES[label] || "";
            return chip;
          })
        : [el("span", "none today", "muted small")]),
    );

    const refused = Object.entries(o.refused_last_hour.by_code);
    $("refused-total").textContent = String(o.refused_last_hour.total);
    $("refused").replaceChildren(
      ...(refused.length
        ? refused.map(([code, n]) => {
            const chip = pill(`${code} ${n}`, "refusal");
            chip.title = REFUSALS[code] || "";
            return chip;
          })
        : [el("span", "none in the last hour", "muted small")]),
    );

    const spend = o.spend_today;
    $("spend").textContent = usd(spend.usd);
    const spendShare = spend.budget_usd ? spend.usd / spend.budget_usd : 0;
    $("spend-bar").parentElement.hidden = !spend.budget_usd;
    $("spend-bar").style.width = `${Math.min(100, Math.round(spendShare * 100))}%`;
    $("spend-bar").className = spendShare >= 0.9 ? "bad" : spendShare >= 0.7 ? "warn" : "";
    $("spend-sub").textContent = spend.budget_usd
      ? `of ${usd(spend.budget_usd)} daily budget (${percent(spendShare)}), UTC day`
      : "no daily budget (DAILY_BUDGET_USD unset)";

    const images = o.image_requests_today;
    const used = Object.entries(images.by_provider);
    $("images").replaceChildren(
      ...(used.length
        ? used.map(([provider, n]) => {
            const share = n / images.limit;
            return meter(provider, `${n} / ${images.limit}`, share, "", share >= 0.9 ? "bad" : share >= 0.7 ? "warn" : "");
          })
        : [el("p", "none yet today", "muted small")]),
    );
    $("images-sub").textContent = `IMAGE_RPD_LIMIT ${images.limit} per provider, Pacific-time day`;

    const providers = o.providers.by_provider;
    $("providers").replaceChildren(
      ...(providers.length
        ? providers.map((p) => {
            const ok = p.calls ? p.ok / p.calls : 1;
            const errors = Object.entries(p.errors).map(([k, n]) => `${k} ${n}`).join(", ");
            const title = errors ? `${errors}${p.last_error ? ` — last: ${p.last_error}` : ""}` : "no errors";
            const kind = p.error_share >= 0.5 ? "bad" : p.error_share >= 0.2 ? "warn" : "ok";
            return meter(p.provider, `${percent(ok)} ok of ${p.calls}`, ok, title, kind);
          })
        : [el("p", "no calls", "muted small")]),
    );
    $("providers-sub").textContent = `calls of the last ${o.providers.window_min} min`;
    renderStreams(o);
    renderEventDays(o.events);
  }

  // The overview's `events`: each event of today (its local day met its run), its figures since its local
  // midnight against its daily budget. Shown once an operator made an event (the default one alone is
  // what the other tiles already show).
  function renderEventDays(events) {
    $("tile-events").hidden = events.length <= 1;
    $("event-days").replaceChildren(
      ...events.map((e) => {
        const box = el("div", null, "event-day");
        box.dataset.event = e.id;
        const head = el("div", null, "event-day-head");
        const state = e.running
          ? pill("running", "ok")
          : pill(`ended ${e.ends_at ? timeIn(e.ends_at, e.time_zone) : ""}`.trim(), "muted");
        head.append(el("strong", e.name), state);
        const t = e.today;
        const facts = el(
          "p",
          `${t.sessions} sessions · ${t.packs_delivered} packs · ${t.failures} failed · ${t.leads} leads`,
          "small",
        );
        facts.title = Object.entries(t.failures_by_class).map(([k, n]) => `${k} ${n}`).join(", ") || "no failures";
        const daily = e.budget.daily_usd;
        const share = daily ? t.cost_usd / daily : 0;
        const cost = meter(
          daily ? "Cost today" : "Cost today, no budget",
          daily ? `${usd(t.cost_usd)} of ${usd(daily)}` : usd(t.cost_usd),
          share,
          daily ? `${percent(share)} of the daily budget` : "no daily_budget_usd set for this event",
          share >= 0.9 ? "bad" : share >= 0.7 ? "warn" : "",
        );
        cost.querySelector(".bar").hidden = !daily;
        const zone = el("p", `${e.time_zone} · day from ${dayIn(e.day_start, e.time_zone)}`, "muted small");
        box.append(head, zone, facts, cost);
        return box;
      }),
    );
  }

  // An ISO instant as the wall-clock time (HH:MM) / date of time zone `zone`.
  function timeIn(iso, zone) {
    return new Date(iso).toLocaleTimeString(undefined, { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  }

  function dayIn(iso, zone) {
    return new Date(iso).toLocaleDateString(undefined, { timeZone: zone, dateStyle: "medium" });
  }

  function renderQueue(o) {
    const pause = o.pause;
    $("queue-state").replaceChildren(pause ? pill("Paused", "warn") : pill("Running", "ok"));
    let detail = "Workers take jobs; kiosks accept photos.";
    if (pause) {
      detail = `Source ${pause.source}: ${pause.reason || "no reason given"} — since ${new Date(pause.since).toLocaleTimeString()}`;
      if (pause.resume_at) detail += `, resumes by itself at ${new Date(pause.resume_at).toLocaleTimeString()}`;
      if (pause.source === "env") detail += ". MAINTENANCE_MODE=1 is set: only a restart without it clears this.";
    }
    $("queue-detail").textContent = detail;
    $("queue-counts").textContent = `${o.jobs.queued} waiting · ${o.jobs.running} running`;
    $("pause").hidden = Boolean(pause);
    $("resume").hidden = !pause || pause.source === "env";
  }

  function renderStreams(o) {
    const box = $("streams");
    if (!o.streams) {
      box.replaceChildren(el("p", `Redis not answering: ${o.streams_error || "unknown"}`, "bad small"));
      return;
    }
    const rows = [];
    for (const s of o.streams) {
      for (const g of s.groups.length ? s.groups : [null]) {
        const lag = g ? g.lag ?? 0 : 0;
        const pending = g ? g.pending : 0;
        if (!lag && !pending && !s.dead_letters) continue;
        const row = el("div", null, "stream-row");
        const stale = g && g.oldest_pending_s !== null && g.oldest_pending_s > 60;
        row.append(el("span", s.stream, "mono"));
        const facts = [];
        if (lag) facts.push(`lag ${lag}`);
        if (pending) facts.push(`pending ${pending}${g.oldest_pending_s !== null ? ` (oldest ${duration(g.oldest_pending_s)})` : ""}`);
        if (s.dead_letters) facts.push(`dead ${s.dead_letters}`);
        row.append(el("span", facts.join(" · "), s.dead_letters || stale ? "bad" : "warn"));
        rows.push(row);
      }
    }
    box.replaceChildren(...(rows.length ? rows : [el("p", "all caught up: no lag, nothing pending, no dead letters", "ok small")]));
  }

  /* ---- Job list. ---- */

  async function loadJobs() {
    const seq = ++list.seq;
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (list.q) params.set("q", list.q);
    if (list.status) params.set("status", list.status);
    const cursor = list.cursors[list.page];
    if (cursor) params.set("cursor", cursor);
    const body = await api("GET", `/admin/jobs?${params}`);
    if (seq !== list.seq) return; // a newer request (another page, a search) answers instead
    list.cursors.length = list.page + 1;
    if (body.next_cursor) list.cursors.push(body.next_cursor);
    renderJobs(body.jobs);
    $("page-newer").disabled = list.page === 0;
    $("page-older").disabled = !body.next_cursor;
    $("page-label").textContent = `page ${list.page + 1}`;
    document.querySelector(".pager").hidden = list.page === 0 && !body.next_cursor;
  }

  function renderJobs(jobs) {
    const rows = jobs.map((job) => {
      const tr = document.createElement("tr");
      tr.dataset.jobId = job.id;
      tr.tabIndex = 0;
      const status = cell("");
      status.append(pill(job.status, `status-${job.status}`));
      const requeued = requeuePill(job);
      if (requeued) status.append(" ", requeued);
      const failure = cell(job.failure ? "" : "—");
      const badge = failurePill(job);
      if (badge) failure.append(badge);
      const started = cell(age(job.created_at));
      started.title = new Date(job.created_at).toLocaleString();
      tr.append(
        started, cell(guestLabel(job.guest), job.guest && job.guest.name ? "" : "muted"), cell(telegramLabel(job.guest)),
        cell(job.station), cell(job.outfit_id), status, failure, cell(job.id.slice(0, 8), "mono"),
      );
      const open = () => { location.hash = `#/jobs/${job.id}`; };
      tr.addEventListener("click", open);
      tr.addEventListener("keydown", (event) => { if (event.key === "Enter") open(); });
      return tr;
    });
    $("jobs").tBodies[0].replaceChildren(...rows);
    $("jobs-empty").hidden = rows.length > 0;
  }

  function search(event) {
    event.preventDefault();
    list.q = $("job-query").value.trim();
    list.status = $("job-filter").value;
    list.cursors = [null];
    list.page = 0;
    // The pager belongs to the list on screen, which is not this search's yet: "older" pressed now would
    // ask for page 2 of a search whose page 1 has not answered (no cursor: page 1's rows, labelled page 2).
    $("page-older").disabled = true;
    $("page-newer").disabled = true;
    refresh();
  }

  /* ---- Job page. ---- */

  async function showJob(jobId) {
    let job;
    try {
      job = await api("GET", `/admin/jobs/${jobId}`);
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) {
        $("detail-title").textContent = "No such job";
        $("detail-fields").replaceChildren();
        return;
      }
      throw err;
    }
    $("detail-title").textContent = `${guestLabel(job.guest)} — ${job.outfit_id} at ${job.station || "?"}`;
    const notice = $("detail-notice");
    notice.hidden = !job.failure;
    if (job.failure) notice.textContent = `Failed: ${job.failure}. ${FAILURES[job.failure] || ""}`;
    // The Retry's "a worker takes it in a moment" holds only while the job waits in the queue; once a
    // worker has it (often within the second), the note says so instead of vanishing unread.
    const done = $("detail-done");
    if (done.dataset.whileQueued === job.id && !job.queued_again) {
      done.textContent = "Queued again: a worker has taken it.";
      delete done.dataset.whileQueued;
    }
    $("detail-retry").hidden = !job.retryable;
    $("detail-resend").hidden = !job.resendable;
    $("detail-retry").dataset.jobId = job.id;
    $("detail-resend").dataset.jobId = job.id;

    const fields = [
      ["Status", job.status], ["Guest", guestLabel(job.guest)], ["Telegram", telegramLabel(job.guest)],
      ["Language", job.guest.language], ["Station", job.station], ["Outfit", job.outfit_id],
      ["Attempts", String(job.attempts)],
      ["Queued again", job.requeues ? `${job.requeues}×${job.queued_again ? " (waiting now)" : ""}` : null], ["Error", job.error], ["Sticker set", job.sticker_set_name],
      ["Started", new Date(job.created_at).toLocaleString()],
      ["Link sent", job.link_sent_at ? new Date(job.link_sent_at).toLocaleString() : null],
      ["Selfie", job.selfie_deleted ? "deleted" : "kept"], ["Job id", job.id],
    ];
    $("detail-fields").replaceChildren(...fields.flatMap(([name, value]) => [el("dt", name), el("dd", value ?? "—")]));
    $("detail-events").replaceChildren(
      ...job.events.map((e) => {
        const li = el("li");
        const when = el("time", new Date(e.at).toLocaleTimeString());
        li.append(when, ` ${e.from ?? "∅"} → ${e.to}${e.note ? ` — ${e.note}` : ""}`);
        return li;
      }),
    );
    $("detail-links").replaceChildren(
      ...(job.link_messages.length
        ? job.link_messages.map((m) => {
            const li = el("li");
            li.append(el("time", new Date(m.at).toLocaleTimeString()), ` ${m.command_id.split(":").slice(2).join(":")} — ${m.status}`);
            return li;
          })
        : [el("li", "none sent", "muted")]),
    );
    renderCalls(job);
    await renderStickers(job);
  }

  function renderCalls(job) {
    $("detail-cost").textContent = job.calls.length ? `— ${job.calls.length} calls, ${usd(job.cost_usd)} in all` : "";
    $("detail-calls").tBodies[0].replaceChildren(
      ...job.calls.map((c, k) => {
        const tr = el("tr");
        const outcome = cell("");
        outcome.append(pill(c.outcome, c.outcome === "ok" ? "ok" : "warn"));
        tr.append(
          cell(String(k + 1), "mono"), cell(c.provider), cell(c.model, "mono"), cell(`${c.kind} (${c.call_type})`),
          outcome, cell(`$${c.cost_usd.toFixed(4)}`, "mono"), cell(`${c.latency_s.toFixed(1)} s`, "mono"),
          cell(c.error, "small"),
        );
        return tr;
      }),
    );
    $("detail-no-calls").hidden = job.calls.length > 0;
  }

  async function renderStickers(job) {
    const box = $("detail-stickers");
    $("detail-no-stickers").hidden = job.stickers.length > 0;
    $("detail-sheet").hidden = !job.contact_sheet_url;
    const summary = $("detail-likeness");
    summary.hidden = job.stickers.length === 0;
    if (job.stickers.length) {
      const { text, flagged } = likenessSummary(job);
      summary.textContent = text;
      summary.className = `small ${flagged ? "bad" : "muted"}`;
    }
    // Fetched again only when the stickers changed (a regenerated sticker comes with its new likeness).
    const shown = JSON.stringify([job.likeness_bound, job.stickers.map((s) => [s.position, s.likeness, s.likeness_reason])]);
    if (shownImages.jobId === job.id && shownImages.shown === shown) return;
    for (const url of shownImages.urls) URL.revokeObjectURL(url);
    shownImages = { jobId: job.id, shown, urls: [] };
    box.replaceChildren();
    const images = await Promise.all(job.stickers.map((s) => blobUrl(s.url).catch(() => null)));
    box.replaceChildren(
      ...job.stickers.map((s, k) => {
        const likeness = likenessOf(s, job.likeness_bound);
        const figure = el("figure", null, `sticker ${likeness.mark}`.trim());
        figure.dataset.position = String(s.position);
        const img = el("img");
        img.alt = `Sticker ${s.position + 1}${s.emoji ? ` ${s.emoji}` : ""}`;
        img.width = img.height = 112;
        if (images[k]) {
          img.src = images[k];
          shownImages.urls.push(images[k]);
        }
        const caption = el("figcaption", likeness.text, typeof s.likeness === "number" ? "likeness mono" : "likeness");
        caption.title = likeness.title;
        figure.append(img, caption);
        return figure;
      }),
    );
  }

  async function openSheet(event) {
    event.preventDefault();
    const jobId = routeJobId();
    if (!jobId) return;
    const url = await blobUrl(`/admin/jobs/${jobId}/contact-sheet`);
    shownImages.urls.push(url);
    window.open(url, "_blank", "noopener");
  }

  /* ---- Leads. ---- */

  async function loadLeads() {
    renderLeads((await api("GET", "/admin/leads?limit=100")).leads);
  }

  function renderLeads(leads) {
    const rows = leads.map((lead) => {
      const tr = el("tr");
      const status = cell("");
      status.append(pill(lead.status, `lead-${lead.status}`));
      if (lead.status_by) status.append(` ${lead.status_by}`);
      const message = cell(lead.message ? lead.message.slice(0, 90) + (lead.message.length > 90 ? "…" : "") : null);
      if (lead.message) message.title = lead.message;
      const failures = lead.card.failures ? ` (${lead.card.failures} failures)` : "";
      const card = `${lead.card.state}${lead.card.state === "posted" ? "" : failures}`;
      tr.append(
        cell(String(lead.number), "mono"), status, cell(lead.name), cell(lead.contact), message, cell(card),
        cell(String(lead.repeats)), cell(age(lead.created_at)),
      );
      return tr;
    });
    $("leads").tBodies[0].replaceChildren(...rows);
    $("leads-empty").hidden = rows.length > 0;
  }

  async function exportLeads() {
    $("action-error").textContent = "";
    try {
      const response = await request("GET", "/admin/leads.csv");
      const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
      const url = URL.createObjectURL(await response.blob());
      const link = el("a");
      link.href = url;
      link.download = name ? name[1] : "leads.csv";
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      const problem = accessProblem(err);
      if (problem) return signOut(problem);
      $("action-error").textContent = err.message || String(err);
    }
  }

  /* ---- Events (GET/PUT /admin/events, api/admin_events.py): the list, a form to create or edit one. ---- */

  // The offset (ms) of time zone `zone` at the instant `utcMs`.
  function zoneOffset(zone, utcMs) {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat("en-US", {
        timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit",
      }).formatToParts(new Date(utcMs)).map((p) => [p.type, p.value]),
    );
    const wall = Date.UTC(+parts.year, +parts.month - 1, +parts.day, +parts.hour, +parts.minute, +parts.second);
    return wall - Math.floor(utcMs / 1000) * 1000;
  }

  // "2026-07-01T09:00" on the wall clock of `zone` → an ISO instant with offset ("…Z"); "" → null.
  // As Python's zoneinfo with fold=0 (shared/events.py reads times the same way): the offset in force
  // before a clock change, so a repeated wall time is its first instant and a skipped one (a spring-forward
  // gap, Santiago's skipped midnight) the instant after the gap; never the day before.
  function wallToIso(value, zone) {
    if (!value) return null;
    const wall = Date.parse(`${value}:00Z`);
    const day = 24 * 3600 * 1000;
    const before = wall - zoneOffset(zone, wall - day);
    const after = wall - zoneOffset(zone, wall + day);
    const fits = (instant) => instant + zoneOffset(zone, instant) === wall;
    return new Date(fits(before) || !fits(after) ? before : after).toISOString();
  }

  // An ISO instant → the wall clock of `zone` as a datetime-local value; null → "".
  function isoToWall(iso, zone) {
    if (!iso) return "";
    const ms = Date.parse(iso);
    return new Date(ms + zoneOffset(zone, ms)).toISOString().slice(0, 16);
  }

  function inZone(iso, zone) {
    if (!iso) return "open";
    try {
      return new Date(iso).toLocaleString(undefined, { timeZone: zone, dateStyle: "medium", timeStyle: "short" });
    } catch {
      return iso;
    }
  }

  async function loadEvents() {
    renderEvents((await api("GET", "/admin/events")).events);
  }

  function renderEvents(events) {
    const rows = events.map((event) => {
      const tr = el("tr");
      const actions = cell("");
      const edit = el("button", "Edit", "btn small");
      edit.type = "button";
      edit.addEventListener("click", () => openEventForm(event));
      const report = el("a", "Report (CSV)");
      report.href = `/admin/events/${encodeURIComponent(event.id)}/report.csv`;
      report.addEventListener("click", (click) => {
        click.preventDefault();
        download(report.href, `${event.id}-report.csv`);
      });
      actions.append(edit, " ", report);
      tr.append(
        cell(event.id, "mono"), cell(event.name), cell(event.venue || null), cell(event.time_zone),
        cell(inZone(event.starts_at, event.time_zone)), cell(inZone(event.ends_at, event.time_zone)),
        cell(event.stations.join(", ") || (event.is_default ? "(every unlisted station)" : null)),
        cell(event.outfits.join(", ") || "whole catalogue"), actions,
      );
      return tr;
    });
    $("events").tBodies[0].replaceChildren(...rows);
  }

  function openEventForm(event) {
    const editing = Boolean(event);
    const zone = event ? event.time_zone : "UTC";
    $("event-id").value = event ? event.id : "";
    $("event-id").readOnly = editing;
    $("event-name").value = event ? event.name : "";
    $("event-venue").value = event ? event.venue : "";
    $("event-zone").value = zone;
    $("event-starts").value = event ? isoToWall(event.starts_at, zone) : "";
    $("event-ends").value = event ? isoToWall(event.ends_at, zone) : "";
    $("event-stations").value = event ? event.stations.join(", ") : "";
    $("event-outfits").value = event ? event.outfits.join(", ") : "";
    const extra = {};
    if (event) {
      for (const key of ["branding", "set_title", "texts", "languages", "daily_budget_usd", "total_budget_usd"]) {
        extra[key] = event[key];
      }
    }
    $("event-extra").value = JSON.stringify(extra, null, 2);
    $("event-error").textContent = "";
    $("event-form").hidden = false;
    $("event-name").focus();
  }

  const listOf = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);

  async function saveEvent(submit) {
    submit.preventDefault();
    $("event-error").textContent = "";
    let extra;
    try {
      extra = JSON.parse($("event-extra").value || "{}");
    } catch (err) {
      $("event-error").textContent = `More fields: not JSON (${err.message})`;
      return;
    }
    const zone = $("event-zone").value.trim();
    let starts, ends;
    try {
      starts = wallToIso($("event-starts").value, zone);
      ends = wallToIso($("event-ends").value, zone);
    } catch {
      $("event-error").textContent = `Unknown time zone ${zone} (an IANA name such as Europe/Berlin).`;
      return;
    }
    const body = {
      ...extra,
      name: $("event-name").value, venue: $("event-venue").value, time_zone: zone,
      starts_at: starts, ends_at: ends,
      stations: listOf($("event-stations").value), outfits: listOf($("event-outfits").value),
    };
    try {
      await api("PUT", `/admin/events/${encodeURIComponent($("event-id").value)}`, body);
      $("event-form").hidden = true;
      await loadEvents();
    } catch (err) {
      const problem = accessProblem(err);
      if (problem) return signOut(problem);
      $("event-error").textContent = err.code ? `${err.code}: ${err.message}` : err.message || String(err);
    }
  }

  async function download(path, fallbackName) {
    $("action-error").textContent = "";
    try {
      const response = await request("GET", path);
      const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
      const url = URL.createObjectURL(await response.blob());
      const link = el("a");
      link.href = url;
      link.download = name ? name[1] : fallbackName;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      const problem = accessProblem(err);
      if (problem) return signOut(problem);
      $("action-error").textContent = err.message || String(err);
    }
  }

  /* ---- Wiring. ---- */

  $("login").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut());
  $("pause").addEventListener("click", () => act($("pause"), "POST", "/admin/pause"));
  $("resume").addEventListener("click", () => act($("resume"), "POST", "/admin/resume"));
  $("job-search").addEventListener("submit", search);
  $("job-filter").addEventListener("change", search);
  $("page-older").addEventListener("click", () => {
    if (!list.cursors[list.page + 1]) return; // the next page's cursor is not known yet
    list.page += 1;
    refresh();
  });
  $("page-newer").addEventListener("click", () => { list.page = Math.max(0, list.page - 1); refresh(); });
  $("leads-export").addEventListener("click", exportLeads);
  $("event-new").addEventListener("click", () => openEventForm(null));
  $("event-cancel").addEventListener("click", () => { $("event-form").hidden = true; });
  $("event-form").addEventListener("submit", saveEvent);
  $("detail-sheet").addEventListener("click", (event) => openSheet(event).catch(() => {}));
  $("detail-retry").addEventListener("click", () => {
    const id = $("detail-retry").dataset.jobId;
    act($("detail-retry"), "POST", `/admin/jobs/${id}/retry`, () => {
      $("detail-done").dataset.whileQueued = id;
      return "Queued again: a worker takes it in a moment.";
    });
  });
  $("detail-resend").addEventListener("click", () => {
    const id = $("detail-resend").dataset.jobId;
    act($("detail-resend"), "POST", `/admin/jobs/${id}/resend-link`, () => "Link message queued: the guest gets it again in a few seconds.");
  });
  window.addEventListener("hashchange", () => {
    $("detail-done").textContent = "";
    delete $("detail-done").dataset.whileQueued;
    $("action-error").textContent = "";
    window.scrollTo(0, 0);
    if (token) refresh();
  });

  if (token) openDashboard();
  else showLogin();
})();
