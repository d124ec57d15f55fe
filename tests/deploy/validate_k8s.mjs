// Validates Kubernetes manifests offline, three ways, and prints FILE:LINE:COL: /json/path: problem
// for each finding (exit 1 when there is any):
//   1. schema: every object against the official OpenAPI schema of its apiVersion/kind
//      (kubernetes-models' generated validators): types, required fields, formats;
//   2. unknown fields: the OpenAPI schemas allow extra properties, so the objects are also
//      type-checked by TypeScript against kubernetes-types (excess-property checks catch a
//      misspelt `imagePullPolcy` the API server would silently drop);
//   3. CoDL's deployment rules: kustomization resources exist and cover every manifest,
//      ConfigMap/PVC references and Service selectors resolve, and the agent DaemonSet keeps
//      hostPID, io_uring (privileged or seccomp Unconfined), no CPU limit and no nvidia.com/gpu.
// Usage: node validate_k8s.mjs FILE_OR_DIR...   (a directory: its *.yaml, one manifest set)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import ts from "typescript";

const here = path.dirname(fileURLToPath(import.meta.url));
const problems = [];

// ---- loading -------------------------------------------------------------------------------

function listFiles(args) {
  const files = [];
  for (const a of args) {
    if (fs.statSync(a).isDirectory()) {
      for (const f of fs.readdirSync(a).sort()) {
        if (f.endsWith(".yaml") || f.endsWith(".yml")) files.push(path.join(a, f));
      }
    } else {
      files.push(a);
    }
  }
  return files;
}

// One YAML document: its parsed object and a way to find the source position of a path in it.
function loadDocs(file) {
  const text = fs.readFileSync(file, "utf8");
  const lines = new YAML.LineCounter();
  const docs = [];
  // YAML 1.1, as the API server reads manifests (0440 is octal, yes/no are booleans).
  YAML.parseAllDocuments(text, { lineCounter: lines, prettyErrors: false, version: "1.1" }).forEach((doc, index) => {
    for (const e of doc.errors) {
      const p = lines.linePos(e.pos[0]);
      problems.push(`${file}:${p.line}:${p.col}: YAML: ${e.message.split("\n")[0]}`);
    }
    if (doc.errors.length) return;
    const obj = doc.toJS();
    if (obj === null || obj === undefined) return;
    // Source position of `segs`: its value, or with atKey its key (for fields that should not be there).
    const where = (segs, atKey = false) => {
      const pos = (range) => {
        const p = lines.linePos(range[0]);
        return `${file}:${p.line}:${p.col}`;
      };
      if (atKey && segs.length) {
        const parent = segs.length === 1 ? doc.contents : doc.getIn(segs.slice(0, -1), true);
        const pair = parent?.items?.find((it) => it.key && String(it.key.value ?? it.key) === String(segs.at(-1)));
        if (pair?.key?.range) return pos(pair.key.range);
      }
      for (let n = segs.length; n >= 0; n--) {  // the deepest node of `segs` in the source
        const node = n === 0 ? doc.contents : doc.getIn(segs.slice(0, n), true);
        if (node && node.range) return pos(node.range);
      }
      return file;
    };
    docs.push({ file, index, obj, where });
  });
  return docs;
}

const pointer = (segs) => "/" + segs.map((s) => String(s).replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
const label = (d) => [d.obj.kind ?? "?", d.obj.metadata?.name].filter(Boolean).join(" ");
const reported = new Set();  // doc index + path: one finding per place is enough
function report(doc, segs, message, atKey = false) {
  reported.add(`${doc.file}#${doc.index}${pointer(segs)}`);
  problems.push(`${doc.where(segs, atKey)}: ${label(doc)}: ${pointer(segs)}: ${message}`);
}
const alreadyReported = (doc, segs) => reported.has(`${doc.file}#${doc.index}${pointer(segs)}`);

// ---- 1. OpenAPI schema -----------------------------------------------------------------------

function splitApiVersion(apiVersion) {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? { group: "", version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

async function checkSchema(doc) {
  const { apiVersion, kind } = doc.obj;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    report(doc, [], "apiVersion and kind must be strings");
    return false;
  }
  const { group, version } = splitApiVersion(apiVersion);
  const spec = group === "" ? `kubernetes-models/${version}/${kind}` : `kubernetes-models/${group}/${version}/${kind}`;
  let Model;
  try {
    Model = (await import(spec))[kind];
  } catch {
    Model = undefined;
  }
  if (!Model) {
    report(doc, ["kind"], `unknown apiVersion/kind ${apiVersion} ${kind} (not in the Kubernetes schemas)`);
    return false;
  }
  try {
    new Model(doc.obj).validate();
  } catch (e) {
    const errors = e.errors ?? [{ instancePath: "", message: e.message }];
    const seen = new Set();
    for (const err of errors) {
      const segs = err.instancePath.split("/").slice(1).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
      const extra = err.params?.missingProperty ? ` '${err.params.missingProperty}'` : "";
      const msg = `${err.message}${extra}`;
      const key = pointer(segs) + msg;
      if (!seen.has(key)) report(doc, segs.map((s) => (/^\d+$/.test(s) ? Number(s) : s)), msg);
      seen.add(key);
    }
  }
  return true;
}

// ---- 2. unknown fields (TypeScript excess-property checks) ------------------------------------

// kubernetes-types keeps API groups as folders named by the group's first label.
function typesModule(apiVersion) {
  const { group, version } = splitApiVersion(apiVersion);
  return `kubernetes-types/${group === "" ? "core" : group.split(".")[0]}/${version}`;
}

// Emits `value` as a TS literal, one property or item per line, recording each line's path in
// the document so that a TypeScript diagnostic maps back to the manifest.
function emitLiteral(prefix, value, segs, out, lineSegs) {
  const push = (text) => {
    out.push(text);
    lineSegs.push(segs);
  };
  if (Array.isArray(value) && value.length) {
    push(prefix + "[");
    value.forEach((v, i) => emitLiteral("", v, [...segs, i], out, lineSegs));
    push("],");
  } else if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
    push(prefix + "{");
    for (const [k, v] of Object.entries(value)) emitLiteral(JSON.stringify(k) + ": ", v, [...segs, k], out, lineSegs);
    push("},");
  } else {
    push(prefix + (Array.isArray(value) ? "[]" : JSON.stringify(value)) + ",");
  }
}

function checkUnknownFields(docs) {
  const out = [];
  const lineSegs = [];
  const lineDoc = [];
  docs.forEach((doc, i) => {
    const mod = typesModule(doc.obj.apiVersion);
    const start = out.length;
    emitLiteral(`export const m${i}: import(${JSON.stringify(mod)}).${doc.obj.kind} = `, doc.obj, [], out, lineSegs);
    out[out.length - 1] = out[out.length - 1].replace(/,$/, ";");
    for (let l = start; l < out.length; l++) lineDoc[l] = doc;
  });
  const dir = fs.mkdtempSync(path.join(here, ".k8s-typecheck-"));
  try {
    const file = path.join(dir, "manifests.ts");
    fs.writeFileSync(file, out.join("\n") + "\n");
    const program = ts.createProgram([file], {
      strict: true, noEmit: true, skipLibCheck: true, types: [],
      target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Node10,
    });
    const source = program.getSourceFile(file);
    const checker = program.getTypeChecker();
    const lineOf = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line;
    // Unknown fields: every property of every object literal must exist in its contextual type
    // (TypeScript itself reports only the first excess property of an expression).
    const hasField = (type, name) => {
      const parts = type.isUnion() ? type.types : [type];
      return parts.some((t) => t.flags & ts.TypeFlags.Any || checker.getPropertyOfType(t, name) ||
        checker.getIndexInfosOfType(t).length > 0);
    };
    const unknownLines = new Set();
    const visit = (node) => {
      if (ts.isObjectLiteralExpression(node)) {
        const type = checker.getContextualType(node);
        for (const prop of type ? node.properties : []) {
          if (!ts.isPropertyAssignment(prop) || hasField(type, prop.name.text)) continue;
          const line = lineOf(prop);
          unknownLines.add(line);
          const owner = checker.typeToString(checker.getNonNullableType(type));
          report(lineDoc[line], lineSegs[line], `unknown field '${prop.name.text}' (not in ${owner})`, true);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    // Other type errors (wrong types), unless the schema check already flagged that place.
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const msg = ts.flattenDiagnosticMessageText(d.messageText, " ");
      if (!d.file || d.start === undefined) {
        problems.push(`typescript: ${msg}`);
        continue;
      }
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      if (unknownLines.has(line) || d.code === 2353 || d.code === 2561) continue;  // reported above
      if (!alreadyReported(lineDoc[line], lineSegs[line])) report(lineDoc[line], lineSegs[line], msg);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---- 3. CoDL's deployment rules ----------------------------------------------------------------

const podSpecPath = (obj) => (obj.kind === "Pod" ? ["spec"] : ["spec", "template", "spec"]);
const WORKLOADS = new Set(["Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"]);

function checkKustomization(doc, setFiles) {
  const k = doc.obj;
  const known = new Set(["apiVersion", "kind", "metadata", "namespace", "resources", "images", "labels",
    "commonLabels", "commonAnnotations", "configMapGenerator", "secretGenerator", "patches", "namePrefix", "nameSuffix", "replicas"]);
  for (const key of Object.keys(k)) if (!known.has(key)) report(doc, [key], `unknown Kustomization field '${key}'`);
  const dir = path.dirname(doc.file);
  const listed = new Set();
  (k.resources ?? []).forEach((r, i) => {
    const p = path.resolve(dir, r);
    if (!fs.existsSync(p)) report(doc, ["resources", i], `resource '${r}' does not exist`);
    listed.add(p);
  });
  for (const f of setFiles) {
    const p = path.resolve(f);
    const base = path.basename(f);
    if (path.dirname(p) === path.resolve(dir) && p !== path.resolve(doc.file) && !base.includes(".example.") && !listed.has(p)) {
      report(doc, ["resources"], `${base} is not listed (name it *.example.yaml if it is meant to stay out)`);
    }
  }
}

function checkRules(docs, setFiles) {
  const named = (kind) => new Set(docs.filter((d) => d.obj.kind === kind).map((d) => d.obj.metadata?.name));
  const configMaps = named("ConfigMap");
  const claims = named("PersistentVolumeClaim");
  const podLabels = docs.filter((d) => WORKLOADS.has(d.obj.kind))
    .map((d) => (d.obj.kind === "Pod" ? d.obj.metadata?.labels : d.obj.spec?.template?.metadata?.labels) ?? {});
  for (const doc of docs) {
    const o = doc.obj;
    if (o.kind === "Kustomization") {
      checkKustomization(doc, setFiles);
      continue;
    }
    if (o.kind === "Service" && o.spec?.selector) {
      const sel = o.spec.selector;
      if (!podLabels.some((l) => Object.entries(sel).every(([k, v]) => l[k] === v))) {
        report(doc, ["spec", "selector"], "selects no pod template in this set");
      }
    }
    if (!WORKLOADS.has(o.kind)) continue;
    const ps = podSpecPath(o);
    const spec = ps.reduce((v, k) => v?.[k], o) ?? {};
    (spec.volumes ?? []).forEach((v, i) => {
      if (v.configMap && !v.configMap.optional && !configMaps.has(v.configMap.name)) {
        report(doc, [...ps, "volumes", i, "configMap", "name"], `ConfigMap '${v.configMap.name}' is not in this set`);
      }
      if (v.persistentVolumeClaim && !claims.has(v.persistentVolumeClaim.claimName)) {
        report(doc, [...ps, "volumes", i, "persistentVolumeClaim", "claimName"],
          `PersistentVolumeClaim '${v.persistentVolumeClaim.claimName}' is not in this set`);
      }
    });
    const selector = o.spec?.selector?.matchLabels;
    const tmplLabels = o.spec?.template?.metadata?.labels ?? {};
    if (selector && !Object.entries(selector).every(([k, v]) => tmplLabels[k] === v)) {
      report(doc, ["spec", "selector", "matchLabels"], "does not match the pod template's labels");
    }
    if (o.kind !== "DaemonSet") continue;
    // The agent: shares the node with the victim.
    if (spec.hostPID !== true) report(doc, [...ps, "hostPID"], "the agent DaemonSet needs hostPID: true");
    const podUnconfined = spec.securityContext?.seccompProfile?.type === "Unconfined";
    (spec.containers ?? []).forEach((c, i) => {
      const cp = [...ps, "containers", i];
      const sc = c.securityContext ?? {};
      if (!sc.privileged && !podUnconfined && sc.seccompProfile?.type !== "Unconfined") {
        report(doc, [...cp, "securityContext"],
          "needs privileged: true or seccompProfile Unconfined (default seccomp profiles block io_uring)");
      }
      for (const part of ["requests", "limits"]) {
        if (c.resources?.[part]?.["nvidia.com/gpu"] !== undefined) {
          report(doc, [...cp, "resources", part, "nvidia.com/gpu"],
            "the agent must not request GPUs (it would take them from the victim)");
        }
      }
      if (c.resources?.limits?.cpu !== undefined) {
        report(doc, [...cp, "resources", "limits", "cpu"], "no CPU limit on the agent: antagonists must reach their targets");
      }
      if (!(c.resources?.requests?.cpu && c.resources?.requests?.memory)) {
        report(doc, [...cp, "resources", "requests"], "set cpu and memory requests");
      }
    });
  }
}

// ---- main --------------------------------------------------------------------------------------

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error("usage: node validate_k8s.mjs FILE_OR_DIR...");
  process.exit(2);
}
const files = listFiles(args);
const docs = files.flatMap(loadDocs);
const apiObjects = [];
for (const doc of docs) {
  if (doc.obj.kind === "Kustomization") continue;
  if (await checkSchema(doc)) apiObjects.push(doc);
}
if (apiObjects.length) checkUnknownFields(apiObjects);
checkRules(docs, files);

if (problems.length) {
  for (const p of problems) console.log(p);
  console.log(`${problems.length} problem(s) in ${files.length} file(s)`);
  process.exit(1);
}
console.log(`ok: ${docs.length} object(s) in ${files.length} file(s): ${docs.map(label).join(", ")}`);
