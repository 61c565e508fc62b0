// Drives ingest/static/leads.js with a scripted fetch and a fake form; prints what happened as JSON.
const leads = require(process.argv[2]);
const calls = [];
function scripted(answers) {
  return async (url, init) => {
    calls.push(JSON.parse(init.body));
    const next = answers.shift();
    if (next === "network") throw new TypeError("fetch failed");
    return { status: next.status, json: async () => next.body, headers: { get: () => next.retryAfter || null } };
  };
}
const waits = [];
const sleep = async (ms) => { waits.push(ms); };
function fakeForm(values) {
  const attrs = {};
  const elements = {};
  for (const [name, value] of Object.entries(values)) {
    elements[name] = { value, setAttribute: (k, v) => (attrs[name + "." + k] = v), removeAttribute: () => {} };
  }
  const status = { textContent: "", setAttribute: () => {} };
  return {
    dataset: {}, elements, attrs, status, resets: 0,
    reset() { this.resets++; for (const e of Object.values(elements)) e.value = ""; },
    querySelector: () => status,
  };
}
function memoryStorage() {
  const data = {};
  return { data, getItem: (k) => data[k] || null, setItem: (k, v) => (data[k] = v), removeItem: (k) => delete data[k] };
}
(async () => {
  const out = {};
  const payload = { requestId: "req-node-0001", name: "Ann", contact: "+79990000000" };

  calls.length = 0;
  out.retried = await leads.submitLead("/leads", payload, {
    fetch: scripted(["network", { status: 503, body: {} }, { status: 201, body: { lead_number: 7 } }]), sleep });
  out.retriedIds = calls.map((c) => c.requestId);
  out.waits = waits.slice();

  calls.length = 0;
  out.invalid = await leads.submitLead("/leads", payload, { fetch: scripted([
    { status: 422, body: { error: { fields: [{ field: "contact", message: "Enter a phone number" }] } } }]), sleep });
  out.invalidCalls = calls.length;

  calls.length = 0;
  out.down = await leads.submitLead("/leads", payload, { fetch: scripted(["network", "network", "network"]), sleep });

  const form = fakeForm({ name: "Ann", contact: "+79990000000", message: "Booth for 300" });
  const storage = memoryStorage();
  calls.length = 0;
  let answers = ["network", "network", "network"];
  const submit = leads.bindForm(form, { endpoint: "/leads", fetch: (u, i) => scripted(answers)(u, i), sleep, storage,
    location: { href: "https://landing.example/?utm_source=ads", search: "?utm_source=ads" } });
  out.failed = await submit();
  out.keptText = form.elements.message.value;
  out.failedStatus = form.status.textContent;
  out.draft = JSON.parse(storage.data.stickerBoothLeadDraft);
  answers = [{ status: 200, body: { lead_number: 12 } }];
  out.second = await submit();
  out.formIds = calls.map((c) => c.requestId);
  out.utm = calls[0].utm;
  out.resets = form.resets;
  out.okStatus = form.status.textContent;
  out.draftAfter = storage.data.stickerBoothLeadDraft || null;

  const reloaded = fakeForm({ name: "", contact: "", message: "" });
  storage.setItem("stickerBoothLeadDraft", JSON.stringify({ requestId: "req-kept-0001", name: "Bo", message: "hi" }));
  leads.bindForm(reloaded, { endpoint: "/leads", storage });
  out.restored = { id: reloaded.dataset.requestId, name: reloaded.elements.name.value, message: reloaded.elements.message.value };
  // The consent line: unticked, nothing is sent and the box is marked; ticked, the body says so.
  const consenting = fakeForm({ name: "Ann", contact: "+79990000000", message: "" });
  consenting.elements.consent = { checked: false, value: "yes",
    setAttribute: (k, v) => (consenting.attrs["consent." + k] = v), removeAttribute: (k) => delete consenting.attrs["consent." + k] };
  let lang = "en";
  calls.length = 0;
  answers = [{ status: 201, body: { lead_number: 21 } }];
  const send = leads.bindForm(consenting, { endpoint: "/leads", fetch: (u, i) => scripted(answers)(u, i), sleep,
    language: () => lang });
  out.unticked = await send();
  out.untickedCalls = calls.length;
  out.untickedMark = consenting.attrs["consent.aria-invalid"] || null;
  out.untickedStatus = consenting.status.textContent;
  lang = "ru";
  consenting.elements.consent.checked = true;
  out.ticked = await send();
  out.tickedBody = calls[0] || null;
  out.tickedMark = consenting.attrs["consent.aria-invalid"] || null;
  out.tickedStatus = consenting.status.textContent;
  console.log(JSON.stringify(out));
})();
