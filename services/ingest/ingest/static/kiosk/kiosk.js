/* Sticker Booth kiosk page: session QR code → outfit → consent → camera → upload → live status.
 *
 * Retry rules (DESIGN.md §4, spec/000 "Kiosk"): the outfit list is retried 1 s doubling to 10 s until it
 * loads; an upload is retried 3 times after 1, 2, 3 s on a network error or a 5xx, always with the capture
 * id made once per photo (the server is idempotent per capture id); the session status is polled every
 * 1 s for as long as the session exists, and a network error only shows the offline badge. A 503
 * "maintenance" shows the break screen, which keeps probing and carries on by itself.
 * Consent (issue 11): the camera opens only after "Agree" on the consent screen, whose points come from
 * GET /consent (the venue's texts) and whose version is recorded with PUT /sessions/{id}/consent.
 * Issue 13: after linking the guest is greeted by first name with "Not you?" (POST /sessions/{id}/unlink:
 * a new QR code, the other person gets nothing more); the status poll's `paused` shows the break screen
 * on any screen before the photo is sent and carries on by itself (a guest who linked during the break
 * goes on without scanning again); every reset is announced by "Still there?" with a countdown and a big
 * Continue, and says honestly what happens to the photo (one already sent goes on to Telegram); a failed
 * job shows the bot's own text for its case (GET /kiosk/config `guest_texts`) and a Retake only where a
 * new photo can help; the done screen shows the guest's first stickers and a
 * QR code of the set; the welcome screen runs an attract loop of sample stickers; the venue's title,
 * logo and accent colour come from GET /kiosk/config.
 * Uploads (issue 19): the photo leaves the tablet no larger than the pipeline uses (PHOTO_MAX_SIDE_PX on
 * its long side, upright from its EXIF orientation); an upload is given up only when its bytes stop
 * moving for 10 s, or when no answer came 20 s after its last byte (ingest answers a check it cannot
 * finish in time at once with 503 "busy"), so a slow venue uplink still gets a photo through; "busy"
 * shows that the booth is working and sends the same capture again after Retry-After, for up to 90 s.
 * Reload: the session (id, token, language, screen, time of the last touch) is kept in localStorage and a
 * reload carries on where the page was (see "Resume after a reload" below); every reset and "Not you?"
 * forget it first, so the next guest never resumes someone else's session.
 * Staff reset: hold the top-left corner for 3 s. Query string: ?station=<name>&lang=<a language of
 * GET /kiosk/words.js: en, de, es, ru…>&key=<KIOSK_KEY>
 * (the key, when the server sets one, is sent with POST /sessions: only the venue's kiosks open sessions).
 */
"use strict";

(() => {
  const TIMING = {
    pollMs: 1000,
    outfitRetryFirstMs: 1000,
    outfitRetryMaxMs: 10000,
    uploadRetryMs: [1000, 2000, 3000],
    actionRetryMs: [1000, 2000, 3000],
    breakProbeMs: 3000,
    requestTimeoutMs: 10000,
    // An upload is given up when no byte of it moved for uploadStallMs (a slow uplink is never cut while
    // it moves), or when no answer came uploadAnswerMs after its last byte: ingest answers within
    // PHOTO_CHECK_MAX_WAIT_SEC (15 s) or says "busy" at once. "busy" waits Retry-After (1–10 s) and sends
    // the same capture again, for up to busyPatienceMs in all.
    uploadStallMs: 10000,
    uploadAnswerMs: 20000,
    busyPatienceMs: 90000,
    slowUploadNoticeMs: 3000,
    idleMs: 90000,
    idleWarnMs: 15000,
    generatingMs: 180000,
    doneMs: 60000,
    failedMs: 45000,
    resetHoldMs: 3000,
    attractMs: 2600,
  };
  // Screens that go back to the start after this long without a touch (ms); the others wait.
  const AUTO_RETURN = {
    outfits: TIMING.idleMs, consent: TIMING.idleMs, camera: TIMING.idleMs, review: TIMING.idleMs, refused: TIMING.idleMs,
    "send-failed": TIMING.idleMs, generating: TIMING.generatingMs, done: TIMING.doneMs,
    failed: TIMING.failedMs,
  };
  // Screens a pause replaces with the break screen (nothing sent yet); the others carry on.
  const BREAKABLE = new Set(["welcome", "outfits", "consent", "camera", "review", "refused", "send-failed"]);
  // Screens that greet the linked guest ("Hi, Ann — not you?").
  const GREETED = new Set(["outfits", "consent", "camera", "review", "refused", "send-failed"]);
  // The pipeline's photo input: worker/providers/images.py PHOTO_MAX_SIDE_PX (px, long side); GET
  // /kiosk/config says it too (photo_max_side_px).
  const PHOTO_MAX_SIDE_PX = 1536;
  const SAMPLES = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => `/kiosk/assets/sample-${n}.webp`);
  const RETAKE_CODES = new Set([
    "no_face", "corrupt_image", "empty_file", "unsupported_format", "file_too_large", "too_many_pixels",
    "rate_limited",
  ]);

  // The words in every language: GET /kiosk/words.js, made from the catalogues
  // (shared/locales/<lang>/LC_MESSAGES/guest.po, msgctxt "kiosk"), English first; the language button
  // steps through them in that order.
  const TEXT = window.KIOSK_WORDS || { en: {} };
  // The event's languages (GET /kiosk/config `languages`, its first the kiosk's) narrow them once loaded.
  let LANGS = Object.keys(TEXT);
  const nextLang = (lang) => LANGS[(LANGS.indexOf(lang) + 1) % LANGS.length];

  const $ = (id) => document.getElementById(id);
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const params = new URLSearchParams(location.search);
  let defaultLang = LANGS.includes(params.get("lang")) ? params.get("lang") : "en";
  const state = {
    station: (params.get("station") || "kiosk").replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 64) || "kiosk",
    kioskKey: params.get("key") || "",
    lang: defaultLang, screen: "welcome", epoch: 0, session: null, status: null, outfits: null,
    outfitId: null, jobId: null, photo: null, consent: null, consented: false, stream: null, refusal: null, timer: null, ticker: null,
    config: null, token: null, failure: null, breakReturn: null, warnTimer: null, stickerUrls: [], attract: null,
    sending: null, unlinking: false, resumed: null,
  };
  const STALE = new Error("the session was reset");

  function t(key, values = {}) {
    const raw = TEXT[state.lang][key] ?? TEXT.en[key] ?? key;
    return raw.replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ""));
  }

  /* The bot's own text for a case (shared/texts.py via GET /kiosk/config), so booth and chat agree;
   * the built-in copy of the same words until the config has loaded (for a `*_last` case: its last
   * sentence, the one that matters at the booth). */
  function guestText(key) {
    const texts = state.config && state.config.guest_texts && state.config.guest_texts[key];
    const fallback = key === "failed" ? "failed_text" : key.endsWith("_last") ? "failed_no_captures" : `code_${key}`;
    return (texts && (texts[state.lang] ?? texts.en)) || t(fallback);
  }

  function setLang(lang) {
    state.lang = lang;
    document.documentElement.lang = lang;
    $("lang").textContent = nextLang(lang).toUpperCase();
    for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
    $("welcome-status").textContent = t(state.session ? "welcome_waiting" : "welcome_opening");
    renderOutfits();
    renderConsent();
    if (state.refusal) renderRefusal(state.refusal);
    if (state.failure) renderFailure(state.failure);
    renderCapturesNote();
    renderGuest();
    renderBreak();
    if (state.screen === "closed") renderClosed();
    if (state.screen === "sending") renderSendingNote();
  }

  /* ---- HTTP: errors as two classes; the offline badge follows the last request. ---- */

  class NetworkError extends Error {}
  class HttpError extends Error {
    constructor(status, code, message, retryAfterS = 0) {
      super(message);
      this.status = status;
      this.code = code;
      this.retryAfterS = retryAfterS; // a 429's Retry-After (s); 0 when the server gave none
    }
    get maintenance() { return this.status === 503 && this.code === "maintenance"; }
    get busy() { return this.status === 503 && this.code === "busy"; }
    get retryable() { return this.status >= 500 && !this.maintenance; }
  }

  function setOnline(online) { $("offline").hidden = online; }

  async function api(method, path, { json, form, headers = {}, timeoutMs = TIMING.requestTimeoutMs } = {}) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    const init = { method, signal: abort.signal, cache: "no-store", headers: { ...headers } };
    if (json !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(json);
    }
    if (form !== undefined) init.body = form;
    let response;
    let body = null;
    try {
      response = await fetch(path, init);
      body = await response.json().catch(() => null);
    } catch (err) {
      setOnline(false);
      throw new NetworkError(String(err));
    } finally {
      clearTimeout(timer);
    }
    return answered(response.status, body, response.headers.get("Retry-After"));
  }

  /* An answer's body, or its HttpError. */
  function answered(status, body, retryAfter) {
    setOnline(status !== 502 && status !== 504);
    if (status < 200 || status > 299) {
      const error = (body && body.error) || {};
      const retryAfterS = Number(retryAfter) || 0;
      const thrown = new HttpError(status, error.code || `http_${status}`, error.message || "", retryAfterS);
      if ("next" in error) thrown.next = error.next; // station_closed: the next event, or null
      throw thrown;
    }
    return body;
  }

  /* POST a form with a timer that follows the bytes (XMLHttpRequest: fetch reports no upload progress):
   * aborted when no byte moved for uploadStallMs, or no answer came uploadAnswerMs after the last one.
   * `onProgress(sent, total)` as the bytes go. Throws as api() does. */
  function postForm(path, form, onProgress = () => {}) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      let timer = null;
      const arm = (ms) => { clearTimeout(timer); timer = setTimeout(() => xhr.abort(), ms); };
      const failed = () => { clearTimeout(timer); setOnline(false); reject(new NetworkError("upload failed")); };
      xhr.upload.addEventListener("progress", (event) => { arm(TIMING.uploadStallMs); onProgress(event.loaded, event.total); });
      xhr.upload.addEventListener("load", () => arm(TIMING.uploadAnswerMs));
      xhr.addEventListener("load", () => {
        clearTimeout(timer);
        let body = null;
        try { body = JSON.parse(xhr.responseText); } catch { body = null; }
        try { resolve(answered(xhr.status, body, xhr.getResponseHeader("Retry-After"))); } catch (err) { reject(err); }
      });
      xhr.addEventListener("error", failed);
      xhr.addEventListener("abort", failed);
      xhr.open("POST", path);
      arm(TIMING.uploadStallMs);
      xhr.send(form);
    });
  }

  /* Run `call` until it answers: network errors and 5xx are retried after each of `delaysMs`, a 503
   * maintenance waits on the break screen (probing with `probe`) and then runs `call` again. Rejects with
   * a 4xx HttpError at once, with the last error once the delays are spent, or with STALE after a reset. */
  async function persist(call, alive, { delaysMs, probe = call, onRetry = () => {} }) {
    let attempt = 0;
    for (;;) {
      try {
        return await call();
      } catch (err) {
        if (!alive()) throw STALE;
        if (err instanceof HttpError && err.maintenance) {
          await waitOutBreak(alive, probe);
          attempt = 0;
          continue;
        }
        const retryable = err instanceof NetworkError || (err instanceof HttpError && err.retryable);
        if (!retryable || attempt >= delaysMs.length) throw err;
        onRetry(attempt + 1, delaysMs.length);
        await sleep(delaysMs[attempt]);
        attempt += 1;
        if (!alive()) throw STALE;
      }
    }
  }

  async function waitOutBreak(alive, probe) {
    enterBreak();
    for (;;) {
      await sleep(TIMING.breakProbeMs);
      if (!alive()) throw STALE;
      try {
        await probe();
        break;
      } catch (err) {
        if (!(err instanceof HttpError) || err.maintenance || err.retryable) continue;
        break; // another refusal: let the caller meet it
      }
    }
    leaveBreak();
  }

  /* The break screen instead of the current one; leaveBreak goes back where the guest was (to the
   * outfits when they linked during the break, to a live camera). */
  function enterBreak() {
    if (state.screen !== "break") {
      state.breakReturn = state.screen;
      show("break");
    }
    renderBreak();
  }

  function leaveBreak() {
    if (state.screen !== "break") return;
    const back = state.breakReturn || "welcome";
    state.breakReturn = null;
    if (back === "welcome" && ready(state.status)) {
      show("outfits");
      renderOutfits();
    } else if (back === "camera") {
      openCamera();
    } else {
      show(back);
    }
  }

  function renderBreak() {
    const name = state.status && state.status.telegram_linked ? state.status.guest_first_name : null;
    $("break-guest").textContent = name ? t("break_linked", { name }) : "";
  }

  /* ---- Screens and timers. ---- */

  function show(name) {
    state.screen = name;
    document.body.dataset.screen = name;
    for (const section of document.querySelectorAll("section.screen")) {
      section.hidden = section.dataset.screen !== name;
    }
    if (name !== "camera") stopCamera();
    if (name === "welcome") startAttract(); else stopAttract();
    renderGuest();
    armTimer();
  }

  /* Every reset is announced: "Still there?" with a countdown and a big Continue for the last
   * idleWarnMs; a touch anywhere (or Continue) starts the screen's time again. */
  /* After a reload (`state.resumed`, set by resume()) the screen it comes back on keeps the idle time
   * already spent there: a reload never buys the previous guest's screen a fresh timer. */
  function armTimer() {
    const resumed = state.resumed && state.resumed.screen === state.screen ? state.resumed : null;
    const spentMs = resumed ? resumed.spentMs : 0;
    if (resumed) state.resumed = null; // once: the next touch starts the screen's time again
    remember(spentMs);
    clearTimeout(state.timer);
    clearTimeout(state.warnTimer);
    clearInterval(state.ticker);
    hideIdle();
    const linked = ready(state.status);
    const full = state.screen === "break" ? (linked || state.photo ? TIMING.idleMs : 0) : AUTO_RETURN[state.screen];
    if (!full) return;
    const ms = Math.max(1, full - spentMs);
    const warnMs = Math.min(TIMING.idleWarnMs, ms);
    state.warnTimer = setTimeout(() => showIdle(Date.now() + warnMs), ms - warnMs);
  }

  function showIdle(deadline) {
    const overlay = $("idle");
    // never promise stickers that will not come: a failed job (or a refused photo) has its own line
    const what = state.photo ? "idle_photo" : state.failure ? "idle_failed" : state.jobId ? "idle_sent" : null;
    $("idle-what").textContent = what ? t(what) : "";
    const tick = () => {
      const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
      $("idle-count").textContent = t("idle_count", { s: left });
    };
    tick();
    overlay.hidden = false;
    document.body.dataset.idle = "warning";
    state.ticker = setInterval(tick, 250);
    state.timer = setTimeout(startOver, Math.max(0, deadline - Date.now()));
  }

  function hideIdle() {
    $("idle").hidden = true;
    delete document.body.dataset.idle;
  }

  function startOver() {
    forget(); // first: whatever happens next, a reload never brings this guest back
    state.epoch += 1;
    const alive = current();
    releasePhoto();
    releaseStickers();
    Object.assign(state, {
      session: null, status: null, outfitId: null, jobId: null, refusal: null, consented: false,
      token: null, failure: null, breakReturn: null, sending: null, resumed: null,
    });
    setLang(defaultLang);
    $("qr").hidden = true;
    $("qr-wait").hidden = false;
    show("welcome");
    renderDelivery();
    openSession(alive);
  }

  function current() {
    const epoch = state.epoch;
    return () => epoch === state.epoch;
  }

  /* ---- Session and status poll. ---- */

  async function openSession(alive) {
    let delay = TIMING.outfitRetryFirstMs;
    for (;;) {
      try {
        const headers = state.kioskKey ? { "X-Kiosk-Key": state.kioskKey } : {};
        const session = await api("POST", "/sessions", { json: { station: state.station }, headers });
        if (!alive()) return;
        state.session = session;
        showQr(session);
        remember();
        leaveBreak();
        poll(alive);
        return;
      } catch (err) {
        if (!alive()) return;
        if (err instanceof HttpError && err.code === "station_closed") {
          state.config = { ...(state.config || {}), closed: true, next: err.next ?? null };
          showClosed();
          return;
        }
        if (err instanceof HttpError && err.maintenance) {
          enterBreak();
          await sleep(TIMING.breakProbeMs);
        } else {
          if (err instanceof HttpError && err.code === "kiosk_key_required") {
            $("welcome-status").textContent = t("kiosk_key_required"); // for staff; tried again below
          }
          // a 429 names when its window ends: an earlier try would only be refused again
          const waitMs = err instanceof HttpError ? Math.min(err.retryAfterS * 1000, TIMING.outfitRetryMaxMs) : 0;
          await sleep(Math.max(delay, waitMs));
          delay = Math.min(delay * 2, TIMING.outfitRetryMaxMs);
        }
      }
    }
  }

  function showQr(session) {
    state.token = session.token;
    const qr = $("qr");
    qr.src = session.qr_svg;
    qr.dataset.deepLink = session.deep_link;
    qr.hidden = false;
    $("qr-wait").hidden = true;
    $("welcome-status").textContent = t("welcome_waiting");
    renderDelivery();
  }

  async function poll(alive) {
    while (alive()) {
      try {
        const status = await api("GET", `/sessions/${state.session.id}`);
        if (alive()) onStatus(status);
      } catch (err) {
        if (alive() && err instanceof HttpError && err.status === 404) return startOver();
      }
      await sleep(TIMING.pollMs);
    }
  }

  /* A guest who can go on past the welcome screen: linked to Telegram, or without it ("no Telegram?"). */
  function ready(status) {
    return Boolean(status && (status.telegram_linked || status.delivery === "download"));
  }

  /* A guest without Telegram is told to wait for the download QR code, not for a chat message. */
  function renderDelivery() {
    const download = Boolean(state.status && state.status.delivery === "download");
    for (const [id, key] of [["generating-text", "generating_text"], ["done-text", "done_text"]]) {
      $(id).dataset.i18n = download ? `${key}_download` : key;
      $(id).textContent = t($(id).dataset.i18n);
    }
    const offered = Boolean(state.config && state.config.download_offered && state.session);
    $("no-telegram").hidden = !offered || ready(state.status);
  }

  async function noTelegram() {
    if (!state.session) return;
    const button = $("no-telegram");
    button.disabled = true;
    const alive = current();
    try {
      const call = () => api("PUT", `/sessions/${state.session.id}/delivery`, { json: { mode: "download" } });
      const status = await persist(call, alive, { delaysMs: TIMING.actionRetryMs });
      if (alive()) onStatus(status);
    } catch (err) {
      if (err === STALE) return;
      if (err instanceof HttpError && err.status === 404) return startOver();
    } finally {
      button.disabled = false;
    }
  }

  function onStatus(status) {
    state.status = status;
    renderDelivery();
    renderGuest();
    renderBreak();
    if (status.paused && BREAKABLE.has(state.screen)) {
      enterBreak();
    } else if (!status.paused && state.screen === "break") {
      leaveBreak();
    } else if (state.screen === "welcome" && ready(status)) {
      show("outfits");
      renderOutfits();
    } else if (state.screen === "generating") {
      $("generating-note").textContent = status.paused ? t("generating_paused") : "";
      const job = status.jobs.find((j) => j.id === state.jobId);
      if (!job) return;
      renderProgress(job.status);
      if (job.status === "delivered") showDone();
      if (job.status === "failed") {
        state.failure = job.failure || { text: "failed", retake: false };
        renderFailure(state.failure);
        show("failed");
      }
    }
  }

  /* ---- Resume after a reload: a staff member's reload, a crashed tablet browser, a tablet that slept.
   *
   * localStorage, not sessionStorage: sessionStorage lives as long as the browser tab, and a kiosk-mode
   * browser that crashed or was killed by the tablet's OS (Chrome --kiosk, Fully Kiosk and the like)
   * comes back with a new tab on its start URL, where sessionStorage is empty; localStorage survives
   * that. The price is that it survives everything else too, so what is kept is bounded:
   * - one entry per station (`?station=`), only the session id, its token (the page needs it for
   *   GET /sessions/{id}/stickers, and GET /sessions/{id} stops returning it once a guest is linked),
   *   the language, the screen and the time of the last touch or screen change;
   * - it is removed before every reset (idle, staff, "Next guest", an unknown session) and before
   *   "Not you?", so the next guest never resumes someone else's session;
   * - it is honoured only within the auto-return time of the screen the session would resume on
   *   (AUTO_RETURN: 90 s before the photo, 180 s generating, 60 s done, 45 s failed), counted from the
   *   last touch: by then the page would have gone back to the start by itself. The welcome QR of a
   *   session nobody has linked has no limit, like the screen itself (nothing personal is on it).
   * Anything else (no entry, a broken one, a 404 for a session the server does not know, any other
   * error reading it) starts a fresh session. ---- */

  const STORE_KEY = `sticker-booth.kiosk.${state.station}`;
  // Screens before the photo (and the upload itself): after a reload they become the camera again when
  // the guest was retaking after a failed job, since the photo in memory is gone.
  const BEFORE_PHOTO = new Set([...GREETED, "sending"]);

  function remember(spentMs = 0) {
    if (!state.session || state.unlinking) return;
    const saved = {
      id: state.session.id, token: state.token, lang: state.lang, screen: state.screen,
      at: Date.now() - spentMs,
    };
    try {
      localStorage.setItem(STORE_KEY, JSON.stringify(saved));
    } catch { /* storage off or full: a reload starts fresh, nothing else changes */ }
  }

  function forget() {
    try { localStorage.removeItem(STORE_KEY); } catch { /* storage off: nothing was kept */ }
  }

  /* The kept session, or null when there is none or it is not one this page wrote. */
  function recall() {
    let saved;
    try { saved = JSON.parse(localStorage.getItem(STORE_KEY) || "null"); } catch { saved = null; }
    const ok = saved && typeof saved === "object"
      && typeof saved.id === "string" && /^[0-9a-f-]{36}$/i.test(saved.id)
      && (saved.token === null || typeof saved.token === "string")
      && typeof saved.at === "number" && typeof saved.screen === "string";
    return ok ? saved : null;
  }

  /* The screen a session's status resumes on (`saved.screen`: where the page was). */
  function resumeScreen(status, saved) {
    if (!ready(status)) return "welcome";
    const job = status.jobs[status.jobs.length - 1];
    if (!job) return status.outfit_id === null ? "outfits" : status.consent ? "camera" : "consent";
    const retaking = job.status === "failed" && BEFORE_PHOTO.has(saved.screen)
      && job.failure && job.failure.retake && status.captures_left > 0;
    if (retaking) return "camera";
    if (job.status === "delivered") return "done";
    if (job.status === "failed") return "failed";
    return "generating";
  }

  async function resume() {
    const saved = recall();
    if (!saved) return startOver();
    state.epoch += 1;
    const alive = current();
    let status;
    try {
      status = await api("GET", `/sessions/${saved.id}`);
    } catch {
      return alive() ? startOver() : undefined;
    }
    if (!alive()) return;
    const target = resumeScreen(status, saved);
    const elapsed = Date.now() - saved.at;
    const limit = target === "welcome" ? Infinity : AUTO_RETURN[target];
    if (!(elapsed >= 0 && elapsed < limit)) return startOver();
    setLang(LANGS.includes(saved.lang) ? saved.lang : defaultLang);
    state.resumed = target === "welcome" ? null : { screen: target, spentMs: elapsed };
    const job = status.jobs[status.jobs.length - 1] || null;
    Object.assign(state, {
      session: status, status, token: status.token ?? saved.token, outfitId: status.outfit_id,
      consented: Boolean(status.consent), jobId: target === "camera" ? null : job && job.id,
    });
    if (target === "welcome") {
      showQr(status);
      show("welcome");
    } else if (target === "outfits") {
      show("outfits");
      renderOutfits();
    } else if (target === "consent") {
      showConsent();
    } else if (target === "camera") {
      openCamera();
    } else if (target === "generating") {
      renderProgress(job.status);
      $("generating-note").textContent = "";
      show("generating");
    } else if (target === "done") {
      showDone();
    } else {
      state.failure = job.failure || { text: "failed", retake: false };
      renderFailure(state.failure);
      show("failed");
    }
    poll(alive);
  }

  /* ---- "Hi, <first name> — not you?": unlink before any photo, show a new QR code. ---- */

  function renderGuest() {
    const s = state.status;
    const greet = Boolean(s && s.telegram_linked && s.guest_first_name && GREETED.has(state.screen));
    $("guest").hidden = !greet;
    if (!greet) return;
    $("guest-hi").textContent = t("hi", { name: s.guest_first_name });
    $("not-you").hidden = s.jobs.length > 0 || Boolean(state.jobId);
  }

  async function notYou() {
    const button = $("not-you");
    button.disabled = true;
    forget(); // a reload from here on starts fresh: it must never greet the person who said "not you"
    state.unlinking = true; // and no touch writes them back meanwhile (remember)
    state.epoch += 1; // answers of the old poll are stale now
    const alive = current();
    try {
      const call = () => api("POST", `/sessions/${state.session.id}/unlink`);
      const session = await persist(call, alive, { delaysMs: TIMING.actionRetryMs });
      if (!alive()) return;
      releasePhoto();
      Object.assign(state, { session, status: session, outfitId: null, consented: false, refusal: null });
      showQr(session);
      show("welcome");
    } catch (err) {
      if (err === STALE) return;
      if (err instanceof HttpError && err.status === 404) return startOver();
      if (err instanceof HttpError && err.code === "photo_sent") button.hidden = true;
    } finally {
      button.disabled = false;
      state.unlinking = false;
      if (alive()) {
        remember(); // the new QR code after an unlink, or the same guest when the unlink was refused
        poll(alive);
      }
    }
  }

  /* ---- Done: the guest's first stickers (fetched with the session's token) and the set's QR. ---- */

  async function showDone() {
    const alive = current();
    show("done");
    releaseStickers();
    $("done-qr").hidden = true;
    $("done-set").hidden = true;
    $("done-download").hidden = true;
    $("done-note").textContent = t("done_loading");
    const headers = { "X-Session-Token": state.token || "" };
    try {
      const list = await api("GET", `/sessions/${state.session.id}/stickers?limit=4`, { headers });
      if (!alive()) return;
      if (list.set_qr_svg) {
        $("done-qr").src = list.set_qr_svg;
        $("done-qr").dataset.setUrl = list.set_url;
        $("done-qr").hidden = false;
        $("done-set").hidden = false;
      }
      if (list.download_qr_svg) {
        $("done-download-qr").src = list.download_qr_svg;
        $("done-download-qr").dataset.downloadUrl = list.download_url;
        $("done-download").hidden = false;
      }
      for (const sticker of list.stickers) {
        const response = await fetch(sticker.url, { headers, cache: "no-store" });
        if (!alive()) return;
        if (!response.ok) continue;
        const url = URL.createObjectURL(await response.blob());
        state.stickerUrls.push(url);
        const img = Object.assign(document.createElement("img"), { src: url, alt: "" });
        img.className = "sticker";
        $("done-stickers").append(img);
      }
      $("done-note").textContent = "";
    } catch {
      if (alive()) $("done-note").textContent = ""; // the link is in Telegram all the same
    }
  }

  function releaseStickers() {
    state.stickerUrls.forEach((url) => URL.revokeObjectURL(url));
    state.stickerUrls = [];
    $("done-stickers").replaceChildren();
  }

  /* ---- Welcome: an attract loop of sample stickers, one popping in after another. ---- */

  function startAttract() {
    if (state.attract) return;
    const slots = [...document.querySelectorAll("#attract img")];
    slots.forEach((img, i) => { if (!img.src) img.src = SAMPLES[i % SAMPLES.length]; });
    let next = slots.length;
    state.attract = setInterval(() => {
      const img = slots[next % slots.length];
      img.classList.remove("pop");
      void img.offsetWidth;
      img.src = SAMPLES[next % SAMPLES.length];
      img.classList.add("pop");
      next += 1;
    }, TIMING.attractMs);
  }

  function stopAttract() {
    clearInterval(state.attract);
    state.attract = null;
  }

  /* ---- Config: the venue's branding and the bot's texts, loaded at start like the outfits. ---- */

  async function loadConfig() {
    let delay = TIMING.outfitRetryFirstMs;
    for (;;) {
      try {
        state.config = await api("GET", `/kiosk/config?station=${encodeURIComponent(state.station)}`);
        applyBranding(state.config);
        applyLanguages(state.config.languages || []);
        renderDelivery();
        setLang(state.lang);
        if (state.config.closed) showClosed();
        return;
      } catch {
        await sleep(delay);
        delay = Math.min(delay * 2, TIMING.outfitRetryMaxMs);
      }
    }
  }

  /* ---- Closed: an event lists this station and none runs now (GET /kiosk/config `closed`, or
   * POST /sessions 409 `station_closed`). The closed screen names the next event and its start in the
   * event's time zone; it asks again every CLOSED_RECHECK_MS and opens the booth by itself (a fresh page:
   * the event's branding, outfits and languages) once the station's event runs. ---- */

  const CLOSED_RECHECK_MS = 60000;

  function showClosed() {
    if (state.screen === "closed") return;
    stopAttract();
    state.epoch += 1; // a session being opened or polled for the welcome screen stops
    show("closed");
    renderClosed();
    recheckClosed();
  }

  function renderClosed() {
    const next = state.config && state.config.next;
    const line = $("closed-next");
    if (!next || !next.starts_at) {
      line.hidden = true;
      return;
    }
    let start = next.starts_at;
    try {
      start = new Intl.DateTimeFormat(state.lang, {
        dateStyle: "medium", timeStyle: "short", timeZone: next.time_zone || "UTC",
      }).format(new Date(next.starts_at));
    } catch { /* an unknown zone or language: the ISO time */ }
    line.textContent = t("closed_next", { name: next.name, start });
    line.hidden = false;
  }

  async function recheckClosed() {
    for (;;) {
      await sleep(CLOSED_RECHECK_MS);
      try {
        const config = await api("GET", `/kiosk/config?station=${encodeURIComponent(state.station)}`);
        if (!config.closed) {
          location.reload();
          return;
        }
        state.config = config;
        renderClosed();
      } catch { /* the next check asks again */ }
    }
  }

  /* The event's languages: the language button steps through them only, and the kiosk starts in the
   * first (or in ?lang= when it is one of them). None: every language, as before. */
  function applyLanguages(languages) {
    const own = languages.filter((lang) => lang in TEXT);
    if (!own.length) return;
    LANGS = own;
    defaultLang = own.includes(params.get("lang")) ? params.get("lang") : own[0];
    if (!own.includes(state.lang) || (state.screen === "welcome" && !state.session?.telegram_linked)) {
      state.lang = defaultLang;
    }
  }

  function applyBranding(config) {
    const root = document.documentElement.style;
    root.setProperty("--accent", config.accent_color);
    root.setProperty("--accent-ink", config.accent_ink);
    if (config.event_title) {
      $("event-title").textContent = config.event_title;
      $("event-title").hidden = false;
      document.title = `${config.event_title} · Sticker Booth`;
    }
    if (config.logo_url) {
      $("logo").src = config.logo_url;
      $("logo").hidden = false;
    }
  }

  /* ---- Outfits: loaded once at start, retried 1 s doubling to 10 s until they come. ---- */

  async function loadOutfits() {
    let delay = TIMING.outfitRetryFirstMs;
    for (;;) {
      try {
        state.outfits = await api("GET", `/outfits?station=${encodeURIComponent(state.station)}`);
        renderOutfits();
        return;
      } catch {
        await sleep(delay);
        delay = Math.min(delay * 2, TIMING.outfitRetryMaxMs);
      }
    }
  }

  function outfitTitle(outfit) {
    return state.lang === "en" ? outfit.title : (TEXT[state.lang][`outfit_${outfit.id}`] ?? outfit.title);
  }

  function renderOutfits() {
    $("outfits-note").textContent = state.outfits ? "" : t("outfits_loading");
    if (!state.outfits) return;
    const grid = $("outfit-grid");
    grid.replaceChildren();
    for (const outfit of state.outfits) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "outfit";
      button.dataset.outfit = outfit.id;
      const img = document.createElement("img");
      img.src = outfit.thumbnail_url;
      img.alt = "";
      const label = document.createElement("span");
      label.textContent = outfitTitle(outfit);
      button.append(img, label);
      button.addEventListener("click", () => chooseOutfit(outfit.id));
      grid.append(button);
    }
  }

  async function chooseOutfit(outfitId) {
    const alive = current();
    const buttons = [...document.querySelectorAll(".outfit")];
    buttons.forEach((b) => { b.disabled = true; b.classList.toggle("chosen", b.dataset.outfit === outfitId); });
    const put = () => api("PUT", `/sessions/${state.session.id}/outfit`, { json: { outfit_id: outfitId } });
    try {
      state.status = await persist(put, alive, { delaysMs: TIMING.actionRetryMs });
      state.outfitId = outfitId;
      state.consented = Boolean(state.status.consent);
      openCamera();
    } catch (err) {
      if (err === STALE) return;
      if (err instanceof HttpError) return refuse(err);
      $("outfits-note").textContent = t("choose_failed");
    } finally {
      buttons.forEach((b) => { b.disabled = false; b.classList.remove("chosen"); });
    }
  }

  /* ---- Consent: loaded at start like the outfits (and again when the venue changed it); "Agree" is
   * recorded on the session before the camera may open. ---- */

  async function loadConsent() {
    let delay = TIMING.outfitRetryFirstMs;
    for (;;) {
      try {
        state.consent = await api("GET", "/consent");
        renderConsent();
        return;
      } catch {
        await sleep(delay);
        delay = Math.min(delay * 2, TIMING.outfitRetryMaxMs);
      }
    }
  }

  function renderConsent() {
    const list = $("consent-points");
    const points = state.consent ? (state.consent.points[state.lang] ?? state.consent.points.en) : [];
    const item = (text) => Object.assign(document.createElement("li"), { textContent: text });
    list.replaceChildren(...points.map(item));
    $("agree").disabled = !state.consent;
    const note = $("consent-note");
    if (!state.consent) note.textContent = t("consent_loading");
    else if (note.textContent === t("consent_loading")) note.textContent = "";
  }

  function showConsent() {
    $("consent-note").textContent = "";
    renderConsent();
    show("consent");
  }

  async function agree() {
    const alive = current();
    if (!state.consent) return;
    const version = state.consent.version;
    $("agree").disabled = true;
    const json = { version, language: state.lang };
    const put = () => api("PUT", `/sessions/${state.session.id}/consent`, { json });
    try {
      state.status = await persist(put, alive, { delaysMs: TIMING.actionRetryMs });
      state.consented = true;
      openCamera();
    } catch (err) {
      if (err === STALE) return;
      if (err instanceof HttpError && err.code === "consent_outdated") {
        state.consent = null;
        renderConsent();
        await loadConsent();
        if (alive()) $("consent-note").textContent = t("consent_changed");
        return;
      }
      if (err instanceof HttpError) return refuse(err);
      $("consent-note").textContent = t("consent_failed");
    } finally {
      $("agree").disabled = !state.consent;
    }
  }

  /* ---- Camera (front, 3-2-1) with a file-input fallback; never before consent. ---- */

  async function openCamera() {
    if (!state.consented) return showConsent();
    const alive = current();
    show("camera");
    renderCapturesNote();
    $("shoot").disabled = true;
    setCameraOff(false);
    try {
      const stream = await navigator.mediaDevices.getUserMedia({
        video: { facingMode: "user", width: { ideal: 1280 }, height: { ideal: 960 } }, audio: false,
      });
      if (!alive() || state.screen !== "camera") return stream.getTracks().forEach((track) => track.stop());
      state.stream = stream;
      const video = $("video");
      video.srcObject = stream;
      video.classList.add("mirrored");
      $("shoot").disabled = false;
    } catch {
      // No camera, no permission, or not a secure context (plain http on the venue LAN): the file input
      // opens the tablet's camera app, so it becomes the one big button and the live-camera words go.
      setCameraOff(true);
    }
  }

  function setCameraOff(off) {
    $("video").hidden = off;
    $("camera-off").hidden = !off;
    $("shoot").hidden = off;
    document.querySelector(".camera-hint").hidden = off;
    $("pick-label").classList.toggle("primary", off);
    $("pick-label").classList.toggle("big", off);
    $("pick-label").classList.toggle("secondary", !off);
  }

  function stopCamera() {
    if (!state.stream) return;
    state.stream.getTracks().forEach((track) => track.stop());
    state.stream = null;
    $("video").srcObject = null;
  }

  function renderCapturesNote() {
    const s = state.status;
    $("captures-note").textContent = s && s.captures > 0 ? t("captures_left", { n: s.captures_left }) : "";
  }

  async function shoot() {
    const alive = current();
    const countdown = $("countdown");
    $("shoot").disabled = true;
    for (let n = 3; n > 0; n -= 1) {
      countdown.textContent = String(n);
      countdown.hidden = false;
      countdown.classList.remove("tick");
      void countdown.offsetWidth; // restart the animation
      countdown.classList.add("tick");
      await sleep(1000);
      if (!alive() || state.screen !== "camera" || !state.stream) {
        countdown.hidden = true;
        return;
      }
    }
    countdown.hidden = true;
    const flash = $("flash");
    flash.classList.remove("on");
    void flash.offsetWidth;
    flash.classList.add("on");
    const blob = await captureFrame($("video"));
    if (!alive()) return;
    $("shoot").disabled = false;
    if (blob) review(blob, "selfie.jpg", true);
  }

  /* The part of the frame the guest saw (the preview is cropped to fill its box), as a JPEG of at most
   * PHOTO_MAX_SIDE_PX on its long side; null when the camera gave no picture yet. */
  function captureFrame(video) {
    const [vw, vh] = [video.videoWidth, video.videoHeight];
    if (!vw || !vh) return Promise.resolve(null);
    const box = video.getBoundingClientRect();
    const aspect = box.width && box.height ? box.width / box.height : vw / vh;
    const [sw, sh] = vw / vh > aspect ? [Math.round(vh * aspect), vh] : [vw, Math.round(vw / aspect)];
    const scale = Math.min(1, PHOTO_MAX_SIDE_PX / Math.max(sw, sh));
    const canvas = document.createElement("canvas");
    canvas.width = Math.round(sw * scale);
    canvas.height = Math.round(sh * scale);
    canvas.getContext("2d").drawImage(video, (vw - sw) / 2, (vh - sh) / 2, sw, sh, 0, 0, canvas.width, canvas.height);
    return new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.92));
  }

  /* A picked photo made as small as the pipeline uses before it leaves the tablet: at most
   * PHOTO_MAX_SIDE_PX on its long side, upright (createImageBitmap applies the EXIF orientation; the new
   * JPEG has none), transparency on white as ingest flattens it. A JPEG already that small goes as it
   * is; one the browser cannot decode (HEIC) too: ingest reads it. */
  async function shrinkPhoto(file) {
    // the bytes in memory: a picked file that changes or goes away later cannot break a retry
    const asItIs = async () => new Blob([await file.arrayBuffer()], { type: file.type });
    let bitmap;
    try {
      bitmap = await createImageBitmap(file, { imageOrientation: "from-image" });
    } catch {
      return asItIs();
    }
    const scale = Math.min(1, PHOTO_MAX_SIDE_PX / Math.max(bitmap.width, bitmap.height));
    if (scale === 1 && file.type === "image/jpeg") {
      bitmap.close();
      return asItIs();
    }
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(bitmap.width * scale));
    canvas.height = Math.max(1, Math.round(bitmap.height * scale));
    const context = canvas.getContext("2d");
    context.fillStyle = "#fff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
    bitmap.close();
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.9));
    return blob || asItIs();
  }

  function newCaptureId() {
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    return `cap-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
  }

  function review(blob, name, mirrored) {
    releasePhoto();
    state.photo = { blob, name, captureId: newCaptureId(), url: URL.createObjectURL(blob) };
    const img = $("review-img");
    img.hidden = false;
    $("review-fallback").hidden = true;
    img.classList.toggle("mirrored", mirrored);
    img.src = state.photo.url;
    show("review");
  }

  function releasePhoto() {
    if (state.photo) URL.revokeObjectURL(state.photo.url);
    state.photo = null;
  }

  /* ---- Upload: same capture id on every retry. ---- */

  async function sendPhoto() {
    const alive = current();
    const photo = state.photo;
    if (!photo) return;
    state.sending = { started: Date.now(), retry: null, busy: false, sent: 0, total: 0 };
    show("sending");
    renderSendingNote();
    const ticker = setInterval(renderSendingNote, 500);
    const busySince = Date.now();
    const upload = async () => {
      for (;;) {
        const form = new FormData();
        form.append("capture_id", photo.captureId);
        form.append("photo", photo.blob, photo.name);
        state.sending.started = Date.now();
        try {
          const accepted = await postForm(`/sessions/${state.session.id}/photo`, form, (sent, total) => {
            Object.assign(state.sending, { sent, total });
          });
          state.sending.busy = false;
          return accepted;
        } catch (err) {
          // "busy": the booth is working on other photos; the same capture again after Retry-After
          if (!(err instanceof HttpError && err.busy) || Date.now() - busySince > TIMING.busyPatienceMs) throw err;
          state.sending.busy = true;
          renderSendingNote();
          await sleep(Math.min(10, Math.max(1, err.retryAfterS)) * 1000);
          if (!alive()) throw STALE;
        }
      }
    };
    const probe = () => api("PUT", `/sessions/${state.session.id}/outfit`, { json: { outfit_id: state.outfitId } });
    try {
      const accepted = await persist(upload, alive, {
        delaysMs: TIMING.uploadRetryMs,
        probe,
        onRetry: (n, total) => { state.sending.retry = { n, total }; renderSendingNote(); },
      });
      if (!alive()) return;
      state.jobId = accepted.job_id;
      releasePhoto();
      renderProgress(accepted.status);
      $("generating-note").textContent = "";
      show("generating");
    } catch (err) {
      if (err === STALE) return;
      if (err instanceof HttpError && err.code === "consent_required") {
        state.consented = false;
        return showConsent();
      }
      if (err instanceof HttpError && !err.retryable) return refuse(err);
      show("send-failed");
    } finally {
      clearInterval(ticker);
      state.sending = null;
    }
  }

  /* What the sending screen says: the retry notice once one was needed, else the seconds spent after
   * the first three. */
  function renderSendingNote() {
    const sending = state.sending;
    if (!sending) return;
    const seconds = Math.floor((Date.now() - sending.started) / 1000);
    let text = "";
    if (sending.busy) text = t("busy");
    else if (sending.retry) text = t("retrying", sending.retry);
    else if (seconds * 1000 >= TIMING.slowUploadNoticeMs) text = t("sending_slow", { s: seconds });
    $("sending-note").textContent = text;
  }

  function renderProgress(jobStatus) {
    const order = { queued: 0, processing: 1, rendered: 1, delivering: 2, delivered: 3, failed: -1 };
    const at = order[jobStatus] ?? 0;
    document.querySelectorAll("#progress li").forEach((li, i) => {
      li.classList.toggle("done", i < at);
      li.classList.toggle("active", i === at);
    });
  }

  /* ---- Refusals: the guest's words for the refusal's code, with retake or start over. The API's
   * `message` is written for developers (byte counts, a decoder's own words) and never shown: a code
   * without words of its own gets "try again, or ask our staff". ---- */

  function refuse(err) {
    if (err.status === 404) return startOver();
    state.refusal = err;
    renderRefusal(err);
    show("refused");
  }

  function renderRefusal(err) {
    const retake = RETAKE_CODES.has(err.code) || err.status === 413 || err.status === 415;
    const titleKey = err.code === "no_face" || err.code === "capture_limit" ? `title_${err.code}` : null;
    $("refused-title").textContent = t(titleKey ?? (retake ? "title_photo" : "title_other"));
    const key = `code_${err.code}`;
    const known = key in TEXT.en;
    $("refused-text").textContent = err.code === "no_face" ? guestText("no_face") : t(known ? key : "ask_staff");
    const action = $("refused-action");
    action.textContent = t(retake ? "retake" : "start_over");
    action.dataset.action = retake ? "retake" : "restart";
  }

  /* A failed job in the bot's words for its case; Retake only when a new photo can help (no face,
   * refused as content) and one is left; otherwise the staff help (the admin page can retry it). On the
   * session's last photo the server already names the `*_last` text the bot sent ("That was the last
   * photo…"); should it still offer a retake with none left, the page picks that text itself. */
  function renderFailure(failure) {
    const titles = {
      no_face: "title_no_face", content_refused: "title_content",
      no_face_last: "title_no_face", content_refused_last: "title_content",
    };
    $("failed-title").textContent = t(titles[failure.text] ?? "failed_title");
    const left = state.status ? state.status.captures_left : 0;
    const canRetake = Boolean(failure.retake) && left > 0;
    const key = failure.retake && !canRetake ? `${failure.text}_last` : failure.text;
    $("failed-text").textContent = guestText(key);
    $("failed-again").hidden = !canRetake;
    $("failed-again").classList.toggle("primary", canRetake);
    $("failed-again").classList.toggle("secondary", !canRetake);
    $("failed-again").classList.toggle("big", canRetake);
    $("next-failed").classList.toggle("primary", !canRetake);
    $("next-failed").classList.toggle("big", !canRetake);
    $("next-failed").classList.toggle("secondary", canRetake);
  }

  /* ---- Staff reset: a 3 s press on the top-left corner, from any screen. ---- */

  function armResetGesture() {
    const zone = $("reset-zone");
    let timer = null;
    const cancel = () => {
      clearTimeout(timer);
      zone.classList.remove("holding");
    };
    zone.addEventListener("pointerdown", (event) => {
      event.preventDefault();
      cancel();
      zone.classList.add("holding");
      timer = setTimeout(() => { cancel(); startOver(); }, TIMING.resetHoldMs);
    });
    for (const type of ["pointerup", "pointerleave", "pointercancel"]) zone.addEventListener(type, cancel);
  }

  async function keepAwake() {
    try { await navigator.wakeLock?.request("screen"); } catch { /* not granted: the tablet's own setting */ }
  }

  function wire() {
    $("station").textContent = state.station;
    $("lang").addEventListener("click", () => {
      setLang(nextLang(state.lang));
      remember();
    });
    $("back-outfits").addEventListener("click", () => show("outfits"));
    $("consent-back").addEventListener("click", () => show("outfits"));
    $("agree").addEventListener("click", agree);
    $("shoot").addEventListener("click", shoot);
    $("pick").addEventListener("change", async (event) => {
      const file = event.target.files[0];
      event.target.value = "";
      if (!file) return;
      const alive = current();
      const photo = await shrinkPhoto(file);
      if (alive()) review(photo, photo.type === "image/jpeg" ? "photo.jpg" : file.name || "photo", false);
    });
    $("review-img").addEventListener("error", () => {
      if (!state.photo) return;
      $("review-img").hidden = true; // e.g. HEIC, which the browser cannot draw; the server can read it
      $("review-fallback").hidden = false;
    });
    $("retake").addEventListener("click", openCamera);
    $("failed-retake").addEventListener("click", openCamera);
    $("send").addEventListener("click", sendPhoto);
    $("resend").addEventListener("click", sendPhoto);
    $("refused-action").addEventListener("click", (event) => {
      state.refusal = null;
      return event.currentTarget.dataset.action === "retake" ? openCamera() : startOver();
    });
    $("failed-again").addEventListener("click", () => { state.failure = null; openCamera(); });
    for (const id of ["next-generating", "next-done", "next-failed"]) $(id).addEventListener("click", startOver);
    $("not-you").addEventListener("click", notYou);
    $("no-telegram").addEventListener("click", noTelegram);
    $("idle-continue").addEventListener("click", armTimer);
    document.addEventListener("pointerdown", () => {
      if (state.screen in AUTO_RETURN || state.screen === "break") armTimer();
    }, true);
    document.addEventListener("contextmenu", (event) => event.preventDefault());
    document.addEventListener("visibilitychange", () => { if (!document.hidden) keepAwake(); });
    armResetGesture();
  }

  wire();
  keepAwake();
  loadConfig();
  loadOutfits();
  loadConsent();
  resume();
})();
