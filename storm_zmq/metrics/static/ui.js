// storm-zmq web UI: fetches /api/cluster (cluster mode only), /api/topologies and
// /api/topology/<name> every second and renders them. Every shown number carries
// data-metric and data-value (the raw number from the API) so tests and scripts can
// read the page; text from the cluster only ever goes in through textContent.
"use strict";

const REFRESH_MS = 1000;
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const fmt = {
  count: (v) => (v === null || v === undefined ? "-" : Math.round(v).toLocaleString("en-US")),
  ms: (v) => (v === null || v === undefined ? "-" : v.toFixed(3)),
  ratio: (v) => (v === null || v === undefined ? "-" : v.toFixed(3)),
  text: (v) => (v === null || v === undefined ? "-" : String(v)),
  bytes: (v) => {
    if (v === null || v === undefined) return "-";
    for (const [unit, scale] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]]) {
      if (v >= scale) return (v / scale).toFixed(1) + " " + unit;
    }
    return v + " B";
  },
  duration: (v) => {
    if (v === null || v === undefined) return "-";
    let s = Math.floor(v);
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d) return `${d}d ${h}h`;
    if (h) return `${h}h ${m}m`;
    if (m) return `${m}m ${s}s`;
    return `${s}s`;
  },
  age: (v) => (v === null || v === undefined ? "-" : v.toFixed(1) + "s"),
};

// a table cell holding one metric: data-value is the raw number ("" when unknown)
function cell(attrs, metric, value, format) {
  const isNum = format !== fmt.text;
  const td = el("td", { ...attrs, "data-metric": metric,
    "data-value": value === null || value === undefined ? "" : String(value),
    class: isNum ? "num" : "" }, format(value));
  return td;
}

function selected() {
  return new URLSearchParams(window.location.search).get("topology");
}

async function getJSON(url) {
  const response = await fetch(url, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function renderTopologies(rows, current) {
  const tbody = document.querySelector("#topologies tbody");
  tbody.replaceChildren();
  for (const row of rows) {
    const tr = el("tr", { "data-topology": row.name });
    const link = el("a", { href: "?topology=" + encodeURIComponent(row.name) }, row.name);
    if (row.name === current) link.setAttribute("aria-current", "page");
    const name = el("td");
    name.append(link);
    tr.append(name, el("td", {}, row.id || "-"), el("td", { "data-metric": "status" }, row.status || "-"),
      cell({}, "num_workers", row.num_workers, fmt.count),
      cell({}, "uptime_secs", row.uptime_secs, fmt.duration));
    tbody.append(tr);
  }
  if (!rows.length) tbody.append(el("tr", {}, "no topologies"));
}

// null once /api/cluster has said 404: a local run, which has no cluster
let clusterUrl = "api/cluster";
// whether the server takes Storm's topology actions (cluster mode, ui.actions.enabled)
let actionsOn = false;

async function refreshCluster() {
  if (!clusterUrl) return;
  const response = await fetch(clusterUrl, { cache: "no-store" });
  if (response.status === 404) {
    clusterUrl = null;
    return;
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  renderCluster(body);
}

function renderCluster(cluster) {
  const totals = document.getElementById("cluster-totals");
  const leader = cluster.leader ? "nimbus " + cluster.leader + " leads"
    : "no nimbus leads: nothing is assigned until one does";
  const part = (metric, value, text) =>
    el("span", { "data-scope": "cluster", "data-metric": metric, "data-value": String(value) }, text);
  const n = cluster.supervisors;
  totals.replaceChildren(
    part("supervisors", n, n + " supervisor" + (n === 1 ? "" : "s")), ", ",
    part("slots", cluster.slots, cluster.slots + " worker slots"), ": ",
    part("used_slots", cluster.used_slots, cluster.used_slots + " used"), ", ",
    part("free_slots", cluster.free_slots, cluster.free_slots + " free"), "; ",
    part("leader", cluster.leader || "", leader));
  const alone = cluster.unsupervised || [];
  const unsupervised = alone.length;
  if (unsupervised) {  // their supervisor is gone: they run on while they heartbeat
    const where = alone.map((w) => w.topology + " " + w.host + ":" + w.port).join(", ");
    totals.append("; ", part("unsupervised", unsupervised, unsupervised + " worker" +
      (unsupervised === 1 ? "" : "s") + " on no registered supervisor slot (" + where +
      "): they run on while they heartbeat; nimbus moves them once they stop"));
  }
  totals.classList.toggle("error", !cluster.leader || unsupervised > 0);
  const tbody = document.querySelector("#supervisors tbody");
  tbody.replaceChildren();
  for (const s of cluster.supervisor_list) {
    const byTopology = {};
    for (const [port, name] of Object.entries(s.used)) (byTopology[name] ||= []).push(port);
    const usedBy = Object.entries(byTopology).map(([name, ports]) => name + ": " + ports.join(","));
    const a = { "data-supervisor": s.id };
    const tr = el("tr", a);
    tr.append(el("td", {}, s.id),
      el("td", {}, s.hostname && s.hostname !== s.host ? s.host + " (" + s.hostname + ")" : s.host),
      cell(a, "slots", s.slots, fmt.count), cell(a, "used_slots", s.used_slots, fmt.count),
      cell(a, "free_slots", s.free_slots, fmt.count),
      cell(a, "uptime_secs", s.uptime_secs, fmt.duration),
      cell(a, "heartbeat_age_secs", s.heartbeat_age_secs, fmt.duration),
      el("td", { ...a, "data-metric": "used_by", "data-value": usedBy.join("; ") },
        usedBy.join("; ") || "-"));
    tbody.append(tr);
  }
  if (!cluster.supervisor_list.length) {
    tbody.append(el("tr", {}, "no supervisor is registered: start one with storm-zmq supervisor"));
  }
  document.getElementById("cluster-section").hidden = false;
  actionsOn = Boolean(cluster.actions);
}

// A number asked for: undefined when left empty (the default), null when cancelled
// or not a number >= min (said, and nothing is sent: a typo must not become the default)
function askNumber(question, min, integer) {
  const text = window.prompt(question, "");
  if (text === null) return null;
  if (!text.trim()) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    showActionResult(`not ${integer ? "a whole number" : "a number"} >= ${min}: ${text}`, true);
    return null;
  }
  return value;
}

// Storm's topology actions: what to ask before each, and the JSON body it sends
const ACTIONS = {
  activate: () => ({}),
  deactivate: () => ({}),
  rebalance: () => {
    const wait = askNumber("Rebalance: seconds to wait after deactivating (empty: the message timeout)", 0, false);
    if (wait === null) return null;
    const workers = askNumber("Rebalance: number of workers (empty: as now)", 1, true);
    if (workers === null) return null;
    return { wait_secs: wait, num_workers: workers };  // undefined ones are left out
  },
  kill: () => {
    const wait = askNumber("Kill: seconds to wait after deactivating (empty: the message timeout)", 0, false);
    return wait === null ? null : { wait_secs: wait };
  },
};

async function act(name, action) {
  if (action !== "kill" && action !== "rebalance" && !window.confirm(action + " " + name + "?")) return;
  const body = ACTIONS[action]();
  if (body === null) return;
  try {
    // the header a page of another site cannot send: the server refuses actions without it
    const response = await fetch("api/topology/" + encodeURIComponent(name) + "/" + action, {
      method: "POST", cache: "no-store", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "X-Requested-By": "storm-zmq-ui" },
    });
    const answer = await response.json();
    showActionResult(answer.message || answer.error || response.statusText, !response.ok);
  } catch (err) {
    showActionResult(String(err.message || err), true);
  }
}

// kept until the next action (the status line is the refreshes')
function showActionResult(text, isError) {
  const result = document.getElementById("action-result");
  result.textContent = text;
  result.className = "status" + (isError ? " error" : "");
}

function renderActions(summary) {
  const box = document.getElementById("actions");
  box.hidden = !actionsOn || summary.status === "killed";
  for (const button of box.querySelectorAll("button[data-action]")) {
    button.onclick = () => act(summary.name, button.getAttribute("data-action"));
  }
}

function renderTotals(summary) {
  const t = summary.totals;
  const tbody = document.querySelector("#totals tbody");
  tbody.replaceChildren();
  const tr = el("tr", { "data-scope": "topology" });
  const items = [
    ["status", summary.status, fmt.text], ["uptime_secs", summary.uptime_secs, fmt.duration],
    ["workers_reporting", t.workers_reporting, fmt.count], ["emitted", t.emitted, fmt.count],
    ["transferred", t.transferred, fmt.count], ["acked", t.acked, fmt.count],
    ["failed", t.failed, fmt.count], ["pending", t.pending, fmt.count],
    ["complete_latency_ms", t.complete_latency_ms, fmt.ms],
  ];
  for (const [metric, value, format] of items) {
    tr.append(el("td", { class: "label" }, metric.replace(/_/g, " ")));
    tr.append(cell({ "data-scope": "topology" }, metric, value, format));
  }
  tbody.append(tr);
}

function renderComponents(summary) {
  const tbody = document.querySelector("#components tbody");
  tbody.replaceChildren();
  for (const c of summary.components) {
    const a = { "data-component": c.name };
    const tr = el("tr", a);
    tr.append(el("td", a, c.name), el("td", { ...a, "data-metric": "kind" }, c.kind),
      cell(a, "tasks", c.tasks, fmt.count), cell(a, "emitted", c.emitted, fmt.count),
      cell(a, "transferred", c.transferred, fmt.count), cell(a, "executed", c.executed, fmt.count),
      cell(a, "acked", c.acked, fmt.count), cell(a, "failed", c.failed, fmt.count),
      cell(a, "execute_latency_ms", c.execute_latency_ms, fmt.ms),
      cell(a, "process_latency_ms", c.process_latency_ms, fmt.ms),
      cell(a, "complete_latency_ms", c.complete_latency_ms, fmt.ms),
      cell(a, "capacity", c.capacity, fmt.ratio), cell(a, "queued", c.queued, fmt.count),
      cell(a, "pending", c.pending, fmt.count), cell(a, "errors", c.errors_reported, fmt.count));
    tbody.append(tr);
  }
}

function renderWorkers(summary) {
  const tbody = document.querySelector("#workers tbody");
  tbody.replaceChildren();
  for (const w of summary.workers) {
    const a = { "data-worker": w.key };
    const tr = el("tr", { ...a, class: w.stale ? "stale" : "" });
    // host:port links to the worker's log on its supervisor's log viewer, when on
    const where = el("td", a);
    where.append(w.log_url ? el("a", { href: w.log_url, "data-log": w.key,
      title: "the end of this worker's log" }, w.key) : w.key);
    tr.append(cell(a, "worker", w.worker, fmt.text), where,
      cell(a, "pid", w.pid, fmt.text), cell(a, "uptime_secs", w.uptime_secs, fmt.duration),
      cell(a, "restarts", w.restarts, fmt.count), cell(a, "transport_name", w.transport_name, fmt.text),
      cell(a, "rss_bytes", w.rss_bytes, fmt.bytes), cell(a, "open_fds", w.open_fds, fmt.count),
      cell(a, "queued", w.queued, fmt.count), cell(a, "transfer_queued", w.transfer_queued, fmt.count),
      cell(a, "refused_total", w.refused_total, fmt.count),
      cell(a, "frames_received", w.frames_received, fmt.count),
      cell(a, "frames_sent", w.frames_sent, fmt.count), cell(a, "bytes_sent", w.bytes_sent, fmt.bytes),
      cell(a, "reconnects", w.reconnects, fmt.count),
      cell(a, "backpressure_events", w.backpressure_events, fmt.count),
      cell(a, "cpu_figure", w.cpu_figure, fmt.ratio),
      cell(a, "shuffle_weight", w.shuffle_weight, fmt.ratio),
      cell(a, "age_secs", w.age_secs, fmt.age));
    tbody.append(tr);
  }
}

function renderErrors(summary) {
  const box = document.getElementById("errors");
  box.replaceChildren();
  const names = Object.keys(summary.errors).filter((n) => summary.errors[n].length);
  if (!names.length) {
    box.append(el("p", { id: "no-errors" }, "none"));
    return;
  }
  for (const name of names) {
    const section = el("div", { class: "error-list", "data-errors-of": name });
    section.append(el("h4", {}, name));
    for (const e of summary.errors[name]) {
      const when = e.time ? new Date(e.time * 1000).toLocaleTimeString() : "?";
      const where = [e.task !== null ? "task " + e.task : null,
        e.host ? e.host + ":" + e.port : null].filter(Boolean).join(", ");
      section.append(el("div", { class: "when" }, when + (where ? " (" + where + ")" : "")));
      section.append(el("pre", { "data-error-of": name }, e.text));
    }
    box.append(section);
  }
}

function renderGraph(summary) {
  const g = summary.graph;
  const byName = Object.fromEntries(summary.components.map((c) => [c.name, c]));
  const root = svg("svg", { width: g.width, height: g.height, viewBox: `0 0 ${g.width} ${g.height}`,
    role: "img", "aria-label": "topology graph" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#778" }));
  defs.append(marker);
  root.append(defs);
  const pos = Object.fromEntries(g.nodes.map((n) => [n.name, n]));
  const w = g.node_width, h = g.node_height;
  for (const e of g.edges) {
    const s = pos[e.source], t = pos[e.target];
    const x1 = s.x + w, y1 = s.y + h / 2, x2 = t.x, y2 = t.y + h / 2;
    const bend = Math.max(40, Math.abs(x2 - x1) / 2);
    const path = svg("path", { class: "edge", "data-edge": e.source + "->" + e.target,
      d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`,
      "marker-end": "url(#arrow)" });
    root.append(path);
    const label = e.stream === "default" ? e.grouping : e.stream + " / " + e.grouping;
    root.append(svg("text", { class: "edge-label", x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4,
      "text-anchor": "middle" }, label));
  }
  for (const n of g.nodes) {
    const c = byName[n.name] || { kind: "unknown" };
    const group = svg("g", { class: "node " + c.kind, "data-node": n.name,
      transform: `translate(${n.x},${n.y})` });
    group.append(svg("rect", { width: w, height: h, rx: 6 }));
    group.append(svg("text", { class: "name", x: 8, y: 18 }, n.name));
    const metric = c.kind === "spout" ? "emitted" : "executed";
    const value = c[metric];
    group.append(svg("text", { x: 8, y: 36, "data-metric": metric,
      "data-value": value === undefined ? "" : value }, `${metric} ${fmt.count(value)}`));
    root.append(group);
  }
  document.getElementById("graph").replaceChildren(root);
}

function setStatus(text, isError) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = "status" + (isError ? " error" : "");
  document.body.setAttribute("data-error", isError ? text : "");
}

async function refresh() {
  try {
    await refreshCluster();
    const rows = await getJSON("api/topologies");
    const name = selected() || (rows.find((r) => r.status !== "killed") || rows[0] || {}).name;
    renderTopologies(rows, name);
    const main = document.getElementById("topology");
    if (name) {
      const summary = await getJSON("api/topology/" + encodeURIComponent(name));
      document.getElementById("topology-title").textContent =
        summary.name + (summary.id ? " (" + summary.id + ")" : "");
      main.setAttribute("data-topology", summary.name);
      renderActions(summary);
      renderTotals(summary);
      renderGraph(summary);
      renderComponents(summary);
      renderWorkers(summary);
      renderErrors(summary);
      main.hidden = false;
    } else {
      main.hidden = true;
    }
    setStatus("updated " + new Date().toLocaleTimeString(), false);
    const body = document.body;
    body.setAttribute("data-refreshes", String(Number(body.getAttribute("data-refreshes")) + 1));
  } catch (err) {
    setStatus(String(err.message || err), true);
  }
  setTimeout(refresh, REFRESH_MS);
}

refresh();
