/* Sticker Booth admin page over the /admin/* JSON API (services/ingest/ingest/api/admin_jobs.py,
 * admin_leads.py): queue state with Pause/Resume, jobs with Retry and their transitions, leads (read-only).
 * The token is asked for once and kept in sessionStorage (this tab only). Every value from the server is
 * put on the page as text, never as HTML: lead names and messages come from strangers.
 */
"use strict";

(() => {
  const TOKEN_KEY = "stickerBooth.adminToken";
  const REFRESH_MS = 5000;
  const STATUSES = ["queued", "processing", "rendered", "delivering", "delivered", "failed"];
  const $ = (id) => document.getElementById(id);
  let token = sessionStorage.getItem(TOKEN_KEY);
  let refreshTimer = null;
  let openJobId = null;

  class HttpError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path) {
    let response;
    try {
      response = await fetch(path, { method, cache: "no-store", headers: { Authorization: `Bearer ${token}` } });
    } catch (err) {
      $("offline").hidden = false;
      throw err;
    }
    $("offline").hidden = true;
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const error = (body && body.error) || {};
      throw new HttpError(response.status, error.code || "", error.message || response.statusText);
    }
    return body;
  }

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
    $("dashboard").hidden = false;
    $("sign-out").hidden = false;
    refresh();
  }

  /* ---- Refresh loop. ---- */

  async function refresh() {
    clearTimeout(refreshTimer);
    const filter = $("job-filter").value;
    try {
      const [status, jobs, leads] = await Promise.all([
        api("GET", "/admin/status"),
        api("GET", `/admin/jobs?limit=100${filter ? `&status=${filter}` : ""}`),
        api("GET", "/admin/leads?limit=100"),
      ]);
      renderQueue(status);
      renderJobs(jobs.jobs);
      renderLeads(leads.leads);
      if (openJobId) await showJob(openJobId);
      $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      const problem = accessProblem(err);
      if (problem) return signOut(problem);
    }
    clearTimeout(refreshTimer); // a refresh started meanwhile (an action, the filter) set one too
    refreshTimer = setTimeout(refresh, REFRESH_MS);
  }

  async function act(method, path) {
    $("action-error").textContent = "";
    try {
      await api(method, path);
    } catch (err) {
      const problem = accessProblem(err);
      if (problem) return signOut(problem);
      $("action-error").textContent = err.message || String(err);
    }
    await refresh();
  }

  /* ---- Rendering. ---- */

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text ?? "—";
    if (className) td.className = className;
    return td;
  }

  function pill(text, kind) {
    const span = document.createElement("span");
    span.className = `pill ${kind}`;
    span.textContent = text;
    return span;
  }

  // What each error class of a job means for staff (DESIGN.md §5); shown as the class pill's title.
  const ERROR_CLASSES = {
    content: "The AI providers refused this photo (safety filter). The guest was asked for a new selfie; Retry would only be refused again.",
    invalid: "No usable stickers came back within the attempts (invalid or unreadable images).",
    permanent: "The photo cannot be used (no face, selfie missing, unknown outfit).",
    timeout: "The AI providers did not answer in time.",
    internal: "A bug of ours: see the worker's log for this job.",
    crashed: "The worker processing it died.",
    deadline: "The guest's 15-minute deadline passed.",
    job_cost: "The job reached its cost ceiling (JOB_MAX_COST_USD).",
  };

  function errorClass(job) {
    if (!job.error_class) return cell("—");
    const td = cell("");
    const shown = job.error_class === "permanent" && /no face/i.test(job.error || "") ? "no_face" : job.error_class;
    const badge = pill(shown, `error-class class-${job.error_class}`);
    badge.title = ERROR_CLASSES[job.error_class] || job.error || "";
    td.append(badge);
    return td;
  }

  function age(iso) {
    const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 60) return `${Math.floor(s)} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min`;
    if (s < 86400) return `${Math.floor(s / 3600)} h`;
    return `${Math.floor(s / 86400)} d`;
  }

  function renderQueue(status) {
    const pause = status.pause;
    const state = $("queue-state");
    state.replaceChildren(pause ? pill("Paused", "warn") : pill("Running", "ok"));
    let detail = "Workers take jobs; kiosks accept photos.";
    if (pause) {
      detail = `Source ${pause.source}: ${pause.reason || "no reason given"} — since ${new Date(pause.since).toLocaleString()}`;
      if (pause.resume_at) detail += `, resumes by itself at ${new Date(pause.resume_at).toLocaleString()}`;
      if (pause.source === "env") detail += ". MAINTENANCE_MODE=1 is set: only a restart without it clears this.";
    }
    $("queue-detail").textContent = detail;
    $("pause").hidden = Boolean(pause);
    $("resume").hidden = !pause;
    $("counts").replaceChildren(
      ...STATUSES.map((name) => {
        const chip = document.createElement("span");
        chip.className = `count status-${name}`;
        chip.textContent = `${name} ${status.jobs[name] ?? 0}`;
        return chip;
      }),
    );
  }

  function renderJobs(jobs) {
    const rows = jobs.map((job) => {
      const tr = document.createElement("tr");
      tr.dataset.jobId = job.id;
      tr.className = job.id === openJobId ? "open" : "";
      const status = cell("");
      status.append(pill(job.status, `status-${job.status}`));
      const action = cell("");
      if (job.status === "failed") {
        const retry = document.createElement("button");
        retry.type = "button";
        retry.className = "btn small";
        retry.textContent = "Retry";
        retry.disabled = !job.retryable;
        if (job.error_class === "content") retry.title = "The providers refused this photo: the guest must take a new selfie.";
        else if (job.selfie_deleted) retry.title = "The selfie is already deleted: the guest must take a new photo.";
        retry.addEventListener("click", (event) => {
          event.stopPropagation();
          retry.disabled = true;
          act("POST", `/admin/jobs/${job.id}/retry`);
        });
        action.append(retry);
      }
      tr.append(
        cell(job.id.slice(0, 8), "mono"), cell(job.outfit_id), status, cell(String(job.attempts)),
        errorClass(job), cell(age(job.created_at)), action,
      );
      tr.addEventListener("click", () => showJob(job.id).catch(() => {}));
      return tr;
    });
    $("jobs").tBodies[0].replaceChildren(...rows);
    $("jobs-empty").hidden = rows.length > 0;
  }

  async function showJob(jobId) {
    let job;
    try {
      job = await api("GET", `/admin/jobs/${jobId}`);
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) return closeJob();
      throw err;
    }
    openJobId = jobId;
    for (const tr of $("jobs").tBodies[0].rows) tr.classList.toggle("open", tr.dataset.jobId === jobId);
    $("detail-id").textContent = job.id;
    const fields = [
      ["Status", job.status], ["Outfit", job.outfit_id], ["Attempts", job.attempts],
      ["Error class", job.error_class ? `${job.error_class} — ${ERROR_CLASSES[job.error_class] || ""}` : null],
      ["Error", job.error], ["Sticker set", job.sticker_set_name],
      ["Created", new Date(job.created_at).toLocaleString()], ["Updated", new Date(job.updated_at).toLocaleString()],
      ["Selfie", job.selfie_deleted ? "deleted" : "kept"],
    ];
    $("detail-fields").replaceChildren(
      ...fields.flatMap(([name, value]) => {
        const dt = document.createElement("dt");
        dt.textContent = name;
        const dd = document.createElement("dd");
        dd.textContent = value ?? "—";
        return [dt, dd];
      }),
    );
    $("detail-events").replaceChildren(
      ...job.events.map((e) => {
        const li = document.createElement("li");
        const when = document.createElement("time");
        when.textContent = new Date(e.at).toLocaleTimeString();
        li.append(when, ` ${e.from ?? "∅"} → ${e.to}${e.note ? ` — ${e.note}` : ""}`);
        return li;
      }),
    );
    $("job-detail").hidden = false;
  }

  function closeJob() {
    openJobId = null;
    $("job-detail").hidden = true;
    for (const tr of $("jobs").tBodies[0].rows) tr.classList.remove("open");
  }

  function renderLeads(leads) {
    const rows = leads.map((lead) => {
      const tr = document.createElement("tr");
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

  $("login").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut());
  $("pause").addEventListener("click", () => act("POST", "/admin/pause"));
  $("resume").addEventListener("click", () => act("POST", "/admin/resume"));
  $("job-filter").addEventListener("change", refresh);
  $("detail-close").addEventListener("click", closeJob);

  if (token) {
    $("dashboard").hidden = false;
    $("sign-out").hidden = false;
    refresh();
  } else {
    showLogin();
  }
})();
