/*
 * Sticker Booth lead form, embeddable on any landing page (DESIGN.md §8, spec/000 "Landing").
 *
 *   <form data-sticker-lead> <input name="name"> <input name="contact"> <textarea name="message"></textarea>
 *     <label><input type="checkbox" name="consent"> I agree that … stores my contact data …</label>
 *     <button type="submit">Send</button> <p data-sticker-lead-status aria-live="polite"></p> </form>
 *   <script src="https://<ingest>/landing/leads.js" data-endpoint="https://<ingest>/leads"></script>
 *
 * One submission keeps one requestId until it succeeds: the script retries a failed POST (network error,
 * timeout after 5 s, 5xx) twice with the same id, after 1 s and 2 s, and a visitor who presses Send again
 * after an error also reuses it, so the server answers with the same lead number instead of a second lead.
 * On any failure the form keeps what the visitor typed (also across a reload, in sessionStorage) and says
 * clearly what happened. A lead that could not be sent (the server down or answering 5xx after the retries)
 * is also kept on the visitor's device (localStorage "stickerBoothLeadOutbox", DESIGN.md §8) and sent again
 * with its requestId until ingest accepts it, so it arrives once: when the page is loaded again (also after
 * it was closed), when the browser comes back online, and every 5 s for those whose wait is over (5 s,
 * 15 s, 60 s, 5 min, then every 15 min: the lead backoff of spec/000; a 429 waits its Retry-After). A lead
 * the server refuses (422) is dropped: nothing of it was stored. The consent checkbox (name "consent") must be ticked: the body carries
 * consent: true, and without it the form is not sent (the server would answer 422 consent_required).
 * Texts follow <html lang> (en or ru) at the moment they are shown, so a language switch applies.
 * Also loadable with require() for tests: it then exports the functions only.
 */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    root.StickerLeads = api;
    api.autoBind(root.document, root.document.currentScript);
  }
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  var TIMEOUT_MS = 5000; // spec/000 "Landing": POST /leads times out after 5 s
  var RETRY_DELAYS_MS = [1000, 2000]; // then give up and tell the visitor
  var FIELDS = ["name", "contact", "message"];
  var UTM = ["utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content"];
  var DRAFT_KEY = "stickerBoothLeadDraft";
  var OUTBOX_KEY = "stickerBoothLeadOutbox";
  var RESEND_DELAYS_MS = [5000, 15000, 60000, 300000, 900000]; // spec/000 lead backoff, then 15 min
  var RESEND_TICK_MS = 5000;
  var TEXTS = {
    en: {
      sending: "Sending…",
      sent: "Thank you! Your request #{n} is with us, we will contact you soon.",
      repeat: "Thank you! We added this to your request #{n}.",
      invalid: "Please check the highlighted fields.",
      consent: "Please tick the consent box: we need it to answer you.",
      limited: "Too many requests from your network. Please try again in a few minutes.",
      failed: "We could not send your request. Your text is kept here: please try again in a moment.",
      queued: "We could not send your request yet. It is kept on this device and will be sent automatically.",
    },
    ru: {
      sending: "Отправляем…",
      sent: "Спасибо! Заявка №{n} у нас, скоро свяжемся.",
      repeat: "Спасибо! Мы добавили это к вашей заявке №{n}.",
      invalid: "Проверьте отмеченные поля.",
      consent: "Отметьте согласие: без него мы не можем ответить на заявку.",
      limited: "Слишком много заявок из вашей сети. Попробуйте через несколько минут.",
      failed: "Не получилось отправить заявку. Текст сохранён здесь — попробуйте ещё раз чуть позже.",
      queued: "Пока не получилось отправить заявку. Она сохранена на этом устройстве и уйдёт автоматически.",
    },
  };

  function newRequestId() {
    if (typeof crypto !== "undefined" && crypto.randomUUID) {
      return crypto.randomUUID();
    }
    var id = "";
    for (var i = 0; i < 32; i++) {
      id += Math.floor(Math.random() * 16).toString(16);
    }
    return id;
  }

  function sleep(ms) {
    return new Promise(function (resolve) {
      setTimeout(resolve, ms);
    });
  }

  async function postOnce(fetchImpl, endpoint, payload, timeoutMs) {
    var controller = typeof AbortController !== "undefined" ? new AbortController() : null;
    var timer = controller ? setTimeout(function () { controller.abort(); }, timeoutMs) : null;
    try {
      var response = await fetchImpl(endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(payload),
        signal: controller ? controller.signal : undefined,
      });
      var body = null;
      try {
        body = await response.json();
      } catch (_ignored) {
        body = null;
      }
      return { status: response.status, body: body, headers: response.headers };
    } finally {
      if (timer) {
        clearTimeout(timer);
      }
    }
  }

  /*
   * POST payload (which must carry its requestId) to endpoint, retrying network errors, timeouts and 5xx
   * with the same body. Resolves (never rejects) to one of:
   *   {ok: true, number, repeat, attempts}
   *   {ok: false, reason: "invalid", fields: {name: message}}   (422: not retried)
   *   {ok: false, reason: "rate_limited", retryAfter}           (429: not retried)
   *   {ok: false, reason: "unavailable", attempts}
   */
  async function submitLead(endpoint, payload, options) {
    options = options || {};
    var fetchImpl = options.fetch || fetch;
    var delays = options.retryDelaysMs || RETRY_DELAYS_MS;
    var wait = options.sleep || sleep;
    var timeoutMs = options.timeoutMs || TIMEOUT_MS;
    for (var attempt = 0; attempt <= delays.length; attempt++) {
      try {
        var answer = await postOnce(fetchImpl, endpoint, payload, timeoutMs);
        if (answer.status === 200 || answer.status === 201) {
          return { ok: true, number: answer.body.lead_number, repeat: !!answer.body.repeat, attempts: attempt + 1 };
        }
        if (answer.status === 422) {
          var fields = {};
          var listed = (answer.body && answer.body.error && answer.body.error.fields) || [];
          listed.forEach(function (f) {
            fields[f.field] = f.message;
          });
          return { ok: false, reason: "invalid", fields: fields };
        }
        if (answer.status === 429) {
          return { ok: false, reason: "rate_limited", retryAfter: Number(answer.headers.get("Retry-After")) || null };
        }
      } catch (_networkOrTimeout) {
        // retried below with the same requestId
      }
      if (attempt < delays.length) {
        await wait(delays[attempt]);
      }
    }
    return { ok: false, reason: "unavailable", attempts: delays.length + 1 };
  }

  function readOutbox(storage) {
    try {
      var items = JSON.parse(storage.getItem(OUTBOX_KEY) || "[]");
      return Array.isArray(items) ? items : [];
    } catch (_broken) {
      return [];
    }
  }

  function writeOutbox(storage, items) {
    try {
      if (items.length) {
        storage.setItem(OUTBOX_KEY, JSON.stringify(items));
      } else {
        storage.removeItem(OUTBOX_KEY);
      }
    } catch (_fullOrBlocked) {
      // nothing more can be kept
    }
  }

  /* Keep an unsent payload (with its requestId) in storage, to be sent again by resendUnsent. */
  function keepUnsent(storage, payload, now) {
    var items = readOutbox(storage).filter(function (item) {
      return item.payload.requestId !== payload.requestId;
    });
    items.push({ payload: payload, tries: 1, nextAt: now + RESEND_DELAYS_MS[0] });
    writeOutbox(storage, items);
  }

  /*
   * Send again the kept payloads whose wait is over (all of them with force), one try each, with their
   * own requestId. Accepted ones (200/201) and refused ones (422) leave storage; the others wait the next
   * delay. Resolves to the accepted results, each {ok, number, repeat, attempts, requestId}.
   */
  async function resendUnsent(storage, endpoint, options, now, force) {
    var accepted = [];
    var settled = {};
    var waiting = {};
    var due = readOutbox(storage).filter(function (item) {
      return force || item.nextAt <= now;
    });
    for (var i = 0; i < due.length; i++) {
      var item = due[i];
      var result = await submitLead(endpoint, item.payload, Object.assign({}, options, { retryDelaysMs: [] }));
      if (result.ok) {
        result.requestId = item.payload.requestId;
        accepted.push(result);
        settled[item.payload.requestId] = true;
      } else if (result.reason === "invalid") {
        settled[item.payload.requestId] = true;
      } else {
        var delay = RESEND_DELAYS_MS[Math.min(item.tries, RESEND_DELAYS_MS.length - 1)];
        if (result.reason === "rate_limited" && result.retryAfter) delay = result.retryAfter * 1000;
        waiting[item.payload.requestId] = { payload: item.payload, tries: item.tries + 1, nextAt: now + delay };
      }
    }
    // merged with what was kept meanwhile (another tab, a new failure)
    var items = readOutbox(storage)
      .filter(function (kept) {
        return !settled[kept.payload.requestId];
      })
      .map(function (kept) {
        return waiting[kept.payload.requestId] || kept;
      });
    writeOutbox(storage, items);
    return accepted;
  }

  function collectUtm(search) {
    var utm = {};
    var params = new URLSearchParams(search || "");
    UTM.forEach(function (key) {
      var value = params.get(key);
      if (value) {
        utm[key] = value.slice(0, 200);
      }
    });
    return utm;
  }

  function language(doc) {
    var lang = (doc && doc.documentElement && doc.documentElement.lang) || "en";
    return lang.toLowerCase().indexOf("ru") === 0 ? "ru" : "en";
  }

  function field(form, name) {
    return form.elements ? form.elements[name] : null;
  }

  /*
   * Wire one form. env: {endpoint, fetch?, sleep?, storage?, location?, lang? or language()?}. Returns the submit
   * function (also bound to the form's submit event when the form has addEventListener).
   */
  function bindForm(form, env) {
    var texts = function () {
      var lang = typeof env.language === "function" ? env.language() : env.lang;
      return TEXTS[lang] || TEXTS.en;
    };
    var status = form.querySelector ? form.querySelector("[data-sticker-lead-status]") : null;
    var storage = env.storage || null;
    var outbox = env.outbox || null;
    var busy = false;

    function say(text, isError) {
      if (status) {
        status.textContent = text;
        status.setAttribute("data-state", isError ? "error" : "ok");
      }
    }

    function saveDraft(requestId) {
      if (!storage) return;
      var draft = { requestId: requestId };
      FIELDS.forEach(function (name) {
        var input = field(form, name);
        if (input) draft[name] = input.value;
      });
      try {
        storage.setItem(DRAFT_KEY, JSON.stringify(draft));
      } catch (_full) {
        // the form itself still holds the text
      }
    }

    function restoreDraft() {
      if (!storage) return;
      var raw = storage.getItem(DRAFT_KEY);
      if (!raw) return;
      try {
        var draft = JSON.parse(raw);
        form.dataset.requestId = draft.requestId;
        FIELDS.forEach(function (name) {
          var input = field(form, name);
          if (input && draft[name] && !input.value) input.value = draft[name];
        });
      } catch (_broken) {
        storage.removeItem(DRAFT_KEY);
      }
    }

    async function submit() {
      if (busy) return null;
      busy = true;
      var requestId = form.dataset.requestId || (form.dataset.requestId = newRequestId());
      var payload = { requestId: requestId, utm: collectUtm(env.location ? env.location.search : "") };
      FIELDS.forEach(function (name) {
        var input = field(form, name);
        payload[name] = input ? input.value : "";
      });
      if (env.location) payload.sourcePage = String(env.location.href).slice(0, 500);
      FIELDS.concat(["consent"]).forEach(function (name) {
        var input = field(form, name);
        if (input && input.removeAttribute) input.removeAttribute("aria-invalid");
      });
      var consent = field(form, "consent");
      if (consent) {
        payload.consent = !!consent.checked;
        if (!consent.checked) {
          busy = false;
          if (consent.setAttribute) consent.setAttribute("aria-invalid", "true");
          say(texts().consent, true);
          return { ok: false, reason: "consent_required", fields: { consent: texts().consent } };
        }
      }
      say(texts().sending, false);
      var result = await submitLead(env.endpoint, payload, env);
      busy = false;
      if (result.ok) {
        delete form.dataset.requestId;
        if (storage) storage.removeItem(DRAFT_KEY);
        form.reset();
        say((result.repeat ? texts().repeat : texts().sent).replace("{n}", result.number), false);
      } else if (result.reason === "invalid") {
        delete form.dataset.requestId; // nothing was stored: a corrected form is a new request
        Object.keys(result.fields).forEach(function (name) {
          var input = field(form, name);
          if (input && input.setAttribute) {
            input.setAttribute("aria-invalid", "true");
            input.title = result.fields[name];
          }
        });
        var onlyConsent = Object.keys(result.fields).join(",") === "consent";
        say(onlyConsent ? texts().consent : texts().invalid, true);
      } else {
        saveDraft(requestId);
        if (outbox && result.reason === "unavailable") {
          keepUnsent(outbox, payload, Date.now());
          say(texts().queued, true);
        } else {
          say(result.reason === "rate_limited" ? texts().limited : texts().failed, true);
        }
      }
      return result;
    }

    /* A kept lead was accepted later (resendUnsent): the form it came from is done. */
    submit.resent = function (result) {
      if (form.dataset.requestId === result.requestId) {
        delete form.dataset.requestId;
        if (storage) storage.removeItem(DRAFT_KEY);
        if (form.reset) form.reset();
      }
      say((result.repeat ? texts().repeat : texts().sent).replace("{n}", result.number), false);
    };

    restoreDraft();
    if (form.addEventListener) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        submit();
      });
    }
    return submit;
  }

  function autoBind(doc, script) {
    if (!doc) return;
    var endpoint = (script && script.getAttribute("data-endpoint")) || "/leads";
    var view = doc.defaultView;
    var outbox = null;
    try {
      outbox = view.localStorage;
    } catch (_blocked) {
      outbox = null;
    }
    var bound = [];
    var resending = false;
    async function resend(force) {
      if (!outbox || resending) return;
      resending = true;
      try {
        var accepted = await resendUnsent(outbox, endpoint, {}, Date.now(), force);
        accepted.forEach(function (result) {
          bound.forEach(function (submit) {
            submit.resent(result);
          });
        });
      } finally {
        resending = false;
      }
    }
    var bindAll = function () {
      var forms = doc.querySelectorAll("form[data-sticker-lead]");
      Array.prototype.forEach.call(forms, function (form) {
        var storage = null;
        try {
          storage = view.sessionStorage;
        } catch (_blocked) {
          storage = null;
        }
        bound.push(
          bindForm(form, {
            endpoint: endpoint,
            storage: storage,
            outbox: outbox,
            location: doc.location,
            language: function () {
              return language(doc);
            },
          })
        );
      });
      resend(true); // on load: whatever an earlier visit could not send
      view.addEventListener("online", function () {
        resend(true);
      });
      view.setInterval(function () {
        resend(false);
      }, RESEND_TICK_MS);
    };
    if (doc.readyState === "loading") {
      doc.addEventListener("DOMContentLoaded", bindAll);
    } else {
      bindAll();
    }
  }

  return {
    submitLead: submitLead,
    keepUnsent: keepUnsent,
    resendUnsent: resendUnsent,
    bindForm: bindForm,
    autoBind: autoBind,
    collectUtm: collectUtm,
    newRequestId: newRequestId,
  };
});
