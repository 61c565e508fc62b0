// Validates custom resources against the published models of their API types.
// stdin: a JSON array of Kubernetes documents. stdout: a JSON array, one entry per document, in order:
//   {"kind", "name", "model": "<package>/<group>/<version>" | null, "errors": ["<path>: <message>", ...]}
// "model": null means no installed package models that apiVersion/kind (the caller decides what that means).
// The validators are the ones @kubernetes-models/* generate from the projects' Go API types (the same types
// the CRDs' openAPIV3Schema is generated from): types, enums, patterns and required fields.
import { readFileSync } from "node:fs";

const PACKAGES = {
  "keda.sh": "@kubernetes-models/keda",
  "eventing.keda.sh": "@kubernetes-models/keda",
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
};

async function modelOf(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const pkg = PACKAGES[group];
  if (!pkg) return [null, null];
  const where = `${pkg}/${group}/${version}`;
  let module;
  try {
    module = await import(where);
  } catch {
    return [where, null];
  }
  return [where, module[kind] ?? null];
}

const docs = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const doc of docs) {
  const [where, Model] = await modelOf(String(doc.apiVersion ?? ""), String(doc.kind ?? ""));
  const entry = { kind: doc.kind, name: doc.metadata?.name ?? null, model: Model ? where : null, errors: [] };
  if (Model) {
    try {
      new Model(doc).validate();
    } catch (error) {
      const details = error.errors ?? [{ instancePath: "", message: String(error.message ?? error) }];
      entry.errors = details.map((e) => `${e.instancePath || "/"}: ${e.message}`);
    }
  }
  results.push(entry);
}
process.stdout.write(JSON.stringify(results));
