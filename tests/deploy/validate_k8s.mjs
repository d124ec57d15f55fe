// Validates Kubernetes manifests offline, three ways, and prints FILE:LINE:COL: /json/path: problem
// for each finding (exit 1 when there is any):
//   1. schema: every object against the official OpenAPI schema of its apiVersion/kind
//      (kubernetes-models' generated validators): types, required fields, formats;
//   2. unknown fields: the OpenAPI schemas allow extra properties, so the objects are also
//      type-checked by TypeScript against kubernetes-types (excess-property checks catch a
//      misspelt `imagePullPolcy` the API server would silently drop);
//   3. CoDL's deployment rules: kustomization resources and generator files exist and cover
//      every manifest, ConfigMap/PVC references and Service selectors resolve, Localhost seccomp
//      profiles ship with the manifests and are sound (OCI format, deny by default, io_uring
//      allowed, no duplicates, nothing the runtime default keeps for CAP_SYS_ADMIN), and the
//      agent DaemonSet is unprivileged: no privileged or Unconfined, capabilities.drop [ALL] and
//      only the capabilities it uses, no privilege escalation, memory limits, no CPU limit, no
//      nvidia.com/gpu, hostPID/hostIPC only with the MPS pipe directory (the mps overlay).
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

// configMapGenerator entries of a Kustomization: { name, files: [{ key, file }] } (a `files` item
// is PATH or KEY=PATH, PATH relative to the kustomization's directory).
function generatedConfigMaps(doc) {
  const dir = path.dirname(doc.file);
  return (doc.obj.configMapGenerator ?? []).map((g, gi) => ({
    name: g.name,
    files: (g.files ?? []).map((f, fi) => {
      const text = String(f);
      const eq = text.indexOf("=");
      const rel = eq < 0 ? text : text.slice(eq + 1);
      return { key: eq < 0 ? path.basename(rel) : text.slice(0, eq), rel, file: path.resolve(dir, rel),
        segs: ["configMapGenerator", gi, "files", fi] };
    }),
  }));
}

function checkKustomization(doc, setFiles) {
  const k = doc.obj;
  const known = new Set(["apiVersion", "kind", "metadata", "namespace", "resources", "images", "labels",
    "commonLabels", "commonAnnotations", "configMapGenerator", "secretGenerator", "generatorOptions",
    "patches", "replacements", "namePrefix", "nameSuffix", "replicas"]);
  for (const key of Object.keys(k)) if (!known.has(key)) report(doc, [key], `unknown Kustomization field '${key}'`);
  const dir = path.dirname(doc.file);
  const listed = new Set();
  (k.resources ?? []).forEach((r, i) => {
    const p = path.resolve(dir, r);
    if (!fs.existsSync(p)) report(doc, ["resources", i], `resource '${r}' does not exist`);
    listed.add(p);
  });
  for (const g of generatedConfigMaps(doc)) {
    for (const f of g.files) {
      if (!fs.existsSync(f.file)) {
        report(doc, f.segs, `configMapGenerator ${g.name}: file '${f.rel}' does not exist`);
      } else if (f.rel.split("/").includes("seccomp") && f.rel.endsWith(".json")) {
        checkSeccompFile(f.file);  // referenced or not, a shipped profile must be sound
      }
    }
  }
  for (const f of setFiles) {
    const p = path.resolve(f);
    const base = path.basename(f);
    if (path.dirname(p) === path.resolve(dir) && p !== path.resolve(doc.file) && !base.includes(".example.") && !listed.has(p)) {
      report(doc, ["resources"], `${base} is not listed (name it *.example.yaml if it is meant to stay out)`);
    }
  }
}

// -- seccomp profiles (Localhost): the OCI runtime-spec format, which containerd reads as is ------

const SECCOMP_TOP = new Set(["defaultAction", "defaultErrnoRet", "architectures", "flags", "listenerPath",
  "listenerMetadata", "syscalls"]);
const SECCOMP_RULE = new Set(["names", "action", "errnoRet", "args", "comment"]);
const SECCOMP_ARG = new Set(["index", "value", "valueTwo", "op"]);
// Docker's own profile format: containerd (json.Unmarshal into the runtime-spec struct) drops
// these silently, so a rule meant for some capabilities or kernels would apply to everyone.
const DOCKER_ONLY = new Set(["archMap", "includes", "excludes", "name", "defaultErrno"]);
const SECCOMP_ACTIONS = new Set(["SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
  "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"]);
const SECCOMP_OPS = new Set(["SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
  "SCMP_CMP_MASKED_EQ"]);
// What the io_uring injector and codl-victim --reader io_uring call.
const SECCOMP_REQUIRED = ["io_uring_setup", "io_uring_enter", "io_uring_register"];
// Allowed by the runtime default only with CAP_SYS_ADMIN (or SYS_MODULE, SYS_BOOT, SYS_TIME, ...),
// which the agent does not hold, and used by nothing it runs: a profile allowing them would hand
// back what dropping those capabilities took away.
const SECCOMP_NEVER = new Set(["acct", "add_key", "bpf", "chroot", "clock_settime", "delete_module", "fanotify_init",
  "finit_module", "fsconfig", "fsmount", "fsopen", "fspick", "init_module", "ioperm", "iopl", "kexec_file_load",
  "kexec_load", "keyctl", "lookup_dcookie", "mount", "mount_setattr", "move_mount", "open_by_handle_at", "open_tree",
  "pivot_root", "quotactl", "quotactl_fd", "reboot", "request_key", "setdomainname", "sethostname", "setns",
  "settimeofday", "swapoff", "swapon", "syslog", "umount", "umount2", "unshare", "userfaultfd", "vhangup"]);
// Allowed by the runtime default only with arguments (clone without namespace flags).
const SECCOMP_NEVER_UNCONDITIONAL = new Set(["clone"]);

// Problems of a seccomp profile's text, each { message, offset } (offset into `text`, or -1).
function seccompProblems(text) {
  const out = [];
  const add = (message, offset = -1) => out.push({ message, offset });
  let prof;
  try {
    prof = JSON.parse(text);
  } catch (e) {
    const m = /position (\d+)/.exec(e.message);
    add(`not valid JSON: ${e.message}`, m ? Number(m[1]) : -1);
    return out;
  }
  if (prof === null || typeof prof !== "object" || Array.isArray(prof)) {
    add("not a JSON object");
    return out;
  }
  // Where rule i starts in the text (its "names" key), and where a name appears in it.
  const ruleAt = [...text.matchAll(/"names"\s*:/g)].map((m) => m.index);
  const at = (i, name) => {
    const from = ruleAt[i] ?? -1;
    if (from < 0 || name === undefined) return from;
    const k = text.indexOf(JSON.stringify(name), from);
    return k < 0 ? from : k;
  };
  for (const key of Object.keys(prof)) {
    if (DOCKER_ONLY.has(key)) {
      add(`'${key}' is Docker's profile format, which containerd ignores: write the OCI runtime-spec format (architectures, syscalls[].names/action/args)`,
        text.indexOf(JSON.stringify(key)));
    } else if (!SECCOMP_TOP.has(key)) {
      add(`unknown field '${key}'`, text.indexOf(JSON.stringify(key)));
    }
  }
  if (prof.defaultAction !== "SCMP_ACT_ERRNO") {
    add(`defaultAction must be SCMP_ACT_ERRNO (deny what is not listed), not ${JSON.stringify(prof.defaultAction)}`,
      text.indexOf('"defaultAction"'));
  }
  if (!Array.isArray(prof.architectures) || prof.architectures.length === 0 ||
      !prof.architectures.every((a) => typeof a === "string" && a.startsWith("SCMP_ARCH_"))) {
    add("architectures must list SCMP_ARCH_* values (without them only the native ABI is filtered)",
      text.indexOf('"architectures"'));
  }
  if (!Array.isArray(prof.syscalls) || prof.syscalls.length === 0) {
    add("syscalls must be a non-empty list of rules");
    return out;
  }
  const unconditional = new Map();  // name -> rule index (rules without args)
  const conditional = new Map();    // name -> [rule index] (rules with args)
  const allowedAnyhow = new Set();  // names some ALLOW rule lets through
  const seenArgRule = new Set();
  prof.syscalls.forEach((rule, i) => {
    if (rule === null || typeof rule !== "object" || Array.isArray(rule)) {
      add(`rule ${i} is not an object`, at(i));
      return;
    }
    for (const key of Object.keys(rule)) {
      if (DOCKER_ONLY.has(key)) {
        add(`rule ${i}: '${key}' is Docker's profile format, which containerd ignores (the rule would apply unconditionally)`, at(i));
      } else if (!SECCOMP_RULE.has(key)) {
        add(`rule ${i}: unknown field '${key}'`, at(i));
      }
    }
    if (!SECCOMP_ACTIONS.has(rule.action)) add(`rule ${i}: unknown action ${JSON.stringify(rule.action)}`, at(i));
    if (rule.errnoRet !== undefined && !Number.isInteger(rule.errnoRet)) add(`rule ${i}: errnoRet must be an integer`, at(i));
    const args = rule.args ?? [];
    if (!Array.isArray(args)) {
      add(`rule ${i}: args must be a list`, at(i));
      return;
    }
    args.forEach((a, j) => {
      for (const key of Object.keys(a ?? {})) if (!SECCOMP_ARG.has(key)) add(`rule ${i}: args[${j}]: unknown field '${key}'`, at(i));
      if (!Number.isInteger(a?.index) || a.index < 0 || a.index > 5) add(`rule ${i}: args[${j}].index must be 0..5`, at(i));
      if (!Number.isInteger(a?.value) || a.value < 0) add(`rule ${i}: args[${j}].value must be a non-negative integer`, at(i));
      if (!SECCOMP_OPS.has(a?.op)) add(`rule ${i}: args[${j}]: unknown op ${JSON.stringify(a?.op)}`, at(i));
    });
    if (!Array.isArray(rule.names) || rule.names.length === 0) {
      add(`rule ${i}: names must be a non-empty list`, at(i));
      return;
    }
    const inRule = new Set();
    for (const name of rule.names) {
      if (typeof name !== "string" || !/^[a-z_][a-z0-9_]*$/.test(name)) {
        add(`rule ${i}: ${JSON.stringify(name)} is not a system call name`, at(i));
        continue;
      }
      if (inRule.has(name)) {
        add(`duplicate system call '${name}' in rule ${i}`, at(i, name));
        continue;
      }
      inRule.add(name);
      if (rule.action === "SCMP_ACT_ALLOW") allowedAnyhow.add(name);
      if (args.length === 0) {
        if (unconditional.has(name)) {
          add(`duplicate system call '${name}': rules ${unconditional.get(name)} and ${i}`, at(i, name));
        } else if (conditional.has(name)) {
          add(`system call '${name}' has argument rules (${conditional.get(name).join(", ")}) and an unconditional one (${i})`, at(i, name));
        } else {
          unconditional.set(name, i);
        }
        if (rule.action === "SCMP_ACT_ALLOW" && SECCOMP_NEVER_UNCONDITIONAL.has(name)) {
          add(`allows ${name} unconditionally: the runtime default allows it only without namespace flags (an args rule)`, at(i, name));
        }
      } else {
        const sig = `${name} ${rule.action} ${JSON.stringify(args)}`;
        if (seenArgRule.has(sig)) add(`duplicate rule for '${name}' with the same arguments (rule ${i})`, at(i, name));
        seenArgRule.add(sig);
        if (unconditional.has(name)) {
          add(`system call '${name}' has an unconditional rule (${unconditional.get(name)}) and an argument rule (${i})`, at(i, name));
        }
        conditional.set(name, [...(conditional.get(name) ?? []), i]);
      }
      if (rule.action === "SCMP_ACT_ALLOW" && SECCOMP_NEVER.has(name)) {
        add(`allows ${name}: the runtime default allows it only with capabilities the agent does not have, and the agent does not use it`,
          at(i, name));
      }
    }
  });
  for (const name of SECCOMP_REQUIRED) {
    const i = unconditional.get(name);
    if (i === undefined || prof.syscalls[i].action !== "SCMP_ACT_ALLOW") {
      add(`does not allow ${name} (the io_uring injector needs ${SECCOMP_REQUIRED.join(", ")}; runtime defaults block them)`);
    }
  }
  return out;
}

const checkedProfiles = new Set();  // files and ConfigMap keys already checked

function lineCol(text, offset) {
  const before = text.slice(0, Math.max(0, offset));
  const line = before.split("\n").length;
  return { line, col: offset - before.lastIndexOf("\n") };
}

// A profile file (once), its findings as FILE:LINE:COL.
function checkSeccompFile(file) {
  if (checkedProfiles.has(file)) return;
  checkedProfiles.add(file);
  const text = fs.readFileSync(file, "utf8");
  for (const p of seccompProblems(text)) {
    const pos = p.offset >= 0 ? lineCol(text, p.offset) : { line: 1, col: 1 };
    problems.push(`${file}:${pos.line}:${pos.col}: seccomp profile: ${p.message}`);
  }
}

// Finds the profile a `localhostProfile: profiles/NAME` reference installs, in this set: a
// ConfigMap with a key NAME (a rendered Kustomization) or a configMapGenerator file NAME (the
// source tree, deploy/k8s/seccomp/), and checks it once. Returns false if the set ships none.
function checkLocalhostProfile(docs, name) {
  for (const d of docs) {
    if (d.obj.kind !== "ConfigMap" || typeof d.obj.data?.[name] !== "string") continue;
    const id = `${d.file}#${d.index}#${name}`;
    if (!checkedProfiles.has(id)) {
      checkedProfiles.add(id);
      const text = d.obj.data[name];
      for (const p of seccompProblems(text)) {
        const where = p.offset >= 0 ? ` line ${lineCol(text, p.offset).line}` : "";
        report(d, ["data", name], `seccomp profile ${name}${where}: ${p.message}`);
      }
    }
    return true;
  }
  for (const d of docs) {
    if (d.obj.kind !== "Kustomization") continue;
    for (const g of generatedConfigMaps(d)) {
      const f = g.files.find((x) => x.key === name);
      if (!f) continue;
      if (fs.existsSync(f.file)) checkSeccompFile(f.file);  // else checkKustomization says so
      return true;
    }
  }
  return false;
}

// -- the agent DaemonSet -------------------------------------------------------------------------

// The capabilities the agent uses (docs/deploy.md, "What the agent DaemonSet is granted, and
// why"): victims dropped to victim_user (SETUID, SETGID), signals to them (KILL), pinned memory
// for io_uring registered buffers and RDMA (IPC_LOCK).
const AGENT_CAPS = new Set(["SETUID", "SETGID", "KILL", "IPC_LOCK"]);
const WHY = "(docs/deploy.md, \"What the agent DaemonSet is granted, and why\")";

function checkAgent(doc, docs, ps, spec) {
  const mpsMounted = (spec.volumes ?? []).some((v) => v.name === "mps-pipe") &&
    (spec.containers ?? []).some((c) => (c.volumeMounts ?? []).some((m) => m.name === "mps-pipe"));
  for (const field of ["hostPID", "hostIPC"]) {
    if (spec[field] === true && !mpsMounted) {
      report(doc, [...ps, field], `${field} is only for sharing MPS with victims in other pods (deploy/k8s-overlays/mps, ` +
        "volume mps-pipe): the agent's own children need no host namespace but the network");
    }
  }
  const podSeccomp = spec.securityContext?.seccompProfile;
  if (podSeccomp?.type === "Unconfined") {
    report(doc, [...ps, "securityContext", "seccompProfile", "type"],
      "seccomp Unconfined: use RuntimeDefault here and the agent's Localhost profile on its container");
  }
  const lists = [["initContainers", spec.initContainers ?? []], ["containers", spec.containers ?? []]];
  for (const [list, containers] of lists) {
    containers.forEach((c, i) => {
      const cp = [...ps, list, i];
      const sc = c.securityContext ?? {};
      const scp = [...cp, "securityContext"];
      if (sc.privileged === true) {
        report(doc, [...scp, "privileged"], `must not be privileged: the agent gets the capabilities it uses ${WHY}`);
      }
      if (sc.allowPrivilegeEscalation !== false) {
        report(doc, [...scp, "allowPrivilegeEscalation"],
          "set allowPrivilegeEscalation: false (no_new_privs: victims cannot regain root through setuid binaries)");
      }
      const drop = (sc.capabilities?.drop ?? []).map((x) => String(x).replace(/^CAP_/, ""));
      if (!drop.includes("ALL")) report(doc, [...scp, "capabilities", "drop"], "capabilities.drop must be [ALL]");
      (sc.capabilities?.add ?? []).forEach((cap, j) => {
        const name = String(cap).replace(/^CAP_/, "");
        if (!AGENT_CAPS.has(name) || list === "initContainers") {
          report(doc, [...scp, "capabilities", "add", j], `capability ${cap} is not one ${list === "initContainers" ?
            "an init container" : "the agent"} uses ${WHY}`);
        }
      });
      const seccomp = sc.seccompProfile ?? podSeccomp;
      const seccompPath = sc.seccompProfile ? [...scp, "seccompProfile"] : [...ps, "securityContext", "seccompProfile"];
      if (!seccomp?.type) {
        report(doc, scp, "no seccomp profile (RuntimeDefault, or the agent's Localhost profile)");
      } else if (seccomp.type === "Unconfined") {
        if (sc.seccompProfile) {
          report(doc, [...seccompPath, "type"], list === "containers"
            ? "seccomp Unconfined: use the agent's Localhost profile (deploy/k8s/seccomp)"
            : "seccomp Unconfined: use RuntimeDefault");
        }
      } else if (list === "containers" && seccomp.type !== "Localhost") {
        report(doc, [...seccompPath, "type"],
          `seccomp ${seccomp.type} blocks io_uring: use the Localhost profile profiles/codl-agent.json (deploy/k8s/seccomp)`);
      }
      if (!c.resources?.limits?.memory) {
        report(doc, [...cp, "resources", "limits"], "set a memory limit (the victim and the antagonists count against it too)");
      }
      if (list !== "containers") return;
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

function checkRules(docs, setFiles) {
  const named = (kind) => new Set(docs.filter((d) => d.obj.kind === kind).map((d) => d.obj.metadata?.name));
  const configMaps = named("ConfigMap");
  for (const d of docs) {
    if (d.obj.kind === "Kustomization") for (const g of generatedConfigMaps(d)) configMaps.add(g.name);
  }
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
    // Localhost seccomp profiles must ship with the manifests (and be sound).
    const profiles = [[[...ps, "securityContext"], spec.securityContext]];
    for (const list of ["initContainers", "containers"]) {
      (spec[list] ?? []).forEach((c, i) => profiles.push([[...ps, list, i, "securityContext"], c.securityContext]));
    }
    for (const [segs, sc] of profiles) {
      const sp = sc?.seccompProfile;
      if (sp?.type !== "Localhost") continue;
      if (typeof sp.localhostProfile !== "string" || sp.localhostProfile === "") {
        report(doc, [...segs, "seccompProfile"], "type Localhost needs localhostProfile");
        continue;
      }
      const name = path.posix.basename(sp.localhostProfile);
      if (!checkLocalhostProfile(docs, name)) {
        report(doc, [...segs, "seccompProfile", "localhostProfile"],
          `Localhost profile '${sp.localhostProfile}' is not shipped here: no ConfigMap key or configMapGenerator file ` +
          `named ${name} (the repository's profiles live in deploy/k8s/seccomp/)`);
      }
    }
    const selector = o.spec?.selector?.matchLabels;
    const tmplLabels = o.spec?.template?.metadata?.labels ?? {};
    if (selector && !Object.entries(selector).every(([k, v]) => tmplLabels[k] === v)) {
      report(doc, ["spec", "selector", "matchLabels"], "does not match the pod template's labels");
    }
    // The agent: shares the node with the victim, unprivileged.
    if (o.kind === "DaemonSet") checkAgent(doc, docs, ps, spec);
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
