// Runs ingest/static/admin/admin.js against a minimal fake DOM and a scripted fetch (a signed-in tab):
// prints the jobs table as the page rendered it (per row: id, error-class pill text, class and title,
// whether Retry is there and enabled) and the detail of the first job, as JSON.
const fs = require("fs");
const vm = require("vm");
const [script, answersPath] = process.argv.slice(2);
const answers = JSON.parse(fs.readFileSync(answersPath, "utf8"));

class El {
  constructor(tag) {
    this.tagName = tag; this.children = []; this.textContent = ""; this.className = ""; this.title = "";
    this.hidden = false; this.disabled = false; this.value = ""; this.dataset = {}; this.listeners = {};
    this.classList = { toggle() {}, remove() {}, add() {} };
    this.tBodies = [this];
    this.rows = this.children;
  }
  append(...items) { for (const i of items) this.children.push(typeof i === "string" ? { textContent: i } : i); }
  replaceChildren(...items) { this.children.length = 0; this.append(...items); }
  addEventListener(name, fn) { this.listeners[name] = fn; }
  focus() {}
}
const byId = {};
const document = {
  getElementById: (id) => (byId[id] = byId[id] || new El("div")),
  createElement: (tag) => new El(tag),
};
const fetch = async (path) => {
  const key = Object.keys(answers).find((k) => path.startsWith(k));
  return { ok: true, status: 200, statusText: "OK", json: async () => answers[key] };
};
const sessionStorage = { getItem: () => "token", setItem() {}, removeItem() {} };
const context = { document, fetch, sessionStorage, setTimeout: () => 0, clearTimeout() {}, console, Date, Promise };
vm.runInNewContext(fs.readFileSync(script, "utf8"), context);

(async () => {
  for (let k = 0; k < 20; k++) await new Promise((resolve) => setImmediate(resolve));
  const rows = byId["jobs"].children.map((tr) => {
    const [id, , , , errorCell, , action] = tr.children;
    const pill = errorCell.children[0];
    const retry = action.children[0];
    return {
      id: id.textContent,
      errorClass: pill ? { text: pill.textContent, className: pill.className, title: pill.title } : errorCell.textContent,
      retry: retry ? { disabled: retry.disabled, title: retry.title } : null,
    };
  });
  await byId["jobs"].children[0].listeners.click();  // open the first job's detail
  for (let k = 0; k < 20; k++) await new Promise((resolve) => setImmediate(resolve));
  const fields = byId["detail-fields"].children;
  const detail = {};
  for (let k = 0; k < fields.length; k += 2) detail[fields[k].textContent] = fields[k + 1].textContent;
  process.stdout.write(JSON.stringify({ rows, detail }));
})();
