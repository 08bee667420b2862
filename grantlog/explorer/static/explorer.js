// grantlog explorer: the page's behaviour (no build step). The server answers everything:
// diagnostics (POST /api/edit), answers and proof graphs (POST /api/ask), pins, facts.
"use strict";

const $ = (sel) => document.querySelector(sel);
const explorer = { state: null, doc: 0, seq: 0, shown: 0, diagnostics: [], cy: null,
                   answer: null, edits: 0 };
window.explorer = explorer;
explorer.answerHooks = [];  // functions (answer) called after an answer is drawn

async function api(method, url, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url, init);
  let json = null;
  try { json = await res.json(); } catch (e) { json = null; }
  return { ok: res.ok, status: res.status, json };
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

// ---- the rules pane: colouring (static/highlight.js: the TextMate grammar), marked lines --

// line marks beside the diagnostics': other panes push a function (line number) -> class
// name or "" (e.g. the rules no test fires); every line is an element with data-line
explorer.lineMarks = [];

function paintBackdrop() {
  const lines = $("#editor").value.split("\n");
  const marks = new Map();
  for (const d of explorer.diagnostics) {
    if (d.doc !== explorer.doc || d.line < 1) continue;
    if (marks.get(d.line) !== "err") marks.set(d.line, d.severity === "error" ? "err" : "warn");
  }
  // each line's coloured HTML and classes; highlight.js redraws only the lines that changed
  const body = grantlogHighlight.lines(lines);
  grantlogHighlight.paint($("#backdrop"), lines.map((line, i) => ({ body: body[i],
    cls: ["ln", marks.get(i + 1), ...explorer.lineMarks.map((f) => f(i + 1))].filter(Boolean).join(" ") })));
  syncScroll();
}
window.paintBackdrop = paintBackdrop;

function syncScroll() {
  $("#backdrop").scrollTop = $("#editor").scrollTop;
  $("#backdrop").scrollLeft = $("#editor").scrollLeft;
}

function showCaret() {
  const ta = $("#editor");
  const before = ta.value.slice(0, ta.selectionStart).split("\n");
  $("#caret").textContent = `line ${before.length}, column ${before[before.length - 1].length + 1}`;
}

function goTo(line, col) {
  const ta = $("#editor");
  const lines = ta.value.split("\n");
  let pos = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) pos += lines[i].length + 1;
  pos += Math.max(0, col - 1);
  ta.focus();
  ta.setSelectionRange(pos, pos);
  ta.scrollTop = Math.max(0, (line - 5) * 18);
  syncScroll();
  showCaret();
}

function renderDiagnostics(list, live) {
  explorer.diagnostics = list;
  const ul = $("#diagnostics");
  ul.replaceChildren();
  for (const d of list) {
    const where = d.doc === null ? `${d.file}:${d.line}:${d.col}` :
      `${explorer.state.docs[d.doc].name}:${d.line}:${d.col}`;
    const text = `${where}: ${d.severity}[${d.code}]: ${d.message}` + (d.help ? ` (help: ${d.help})` : "");
    const li = el("li", { class: d.severity, tabindex: "0", "data-code": d.code,
                          "data-line": String(d.line) }, text);
    const jump = () => {
      if (d.doc !== null && d.doc !== explorer.doc) selectDoc(d.doc);
      if (d.line > 0) goTo(d.line, d.col);
    };
    li.addEventListener("click", jump);
    li.addEventListener("keydown", (e) => { if (e.key === "Enter") jump(); });
    ul.append(li);
  }
  if (!list.length) ul.append(el("li", { class: "ok" }, "no problems"));
  $("#live").textContent = live ? "compiled: answers use this text" :
    "does not compile: answers use the last text that did";
  paintBackdrop();
}

let editTimer = null;
function scheduleEdit() {
  clearTimeout(editTimer);
  editTimer = setTimeout(sendEdit, 250);
}

async function sendEdit() {
  const seq = ++explorer.seq;
  const doc = explorer.doc, text = $("#editor").value;
  explorer.state.docs[doc].text = text;
  const r = await api("POST", "/api/edit", { doc, text });
  if (seq !== explorer.seq) return; // a newer edit is on its way
  explorer.shown = seq;
  if (!r.ok) { renderDiagnostics(r.json ? r.json.errors : [], false); return; }
  explorer.edits++;
  renderDiagnostics(r.json.diagnostics, r.json.live);
  renderPins(r.json.pins);
  if (r.json.relations) renderRelations(r.json.relations);
}

function selectDoc(i) {
  explorer.doc = i;
  $("#doc").value = String(i);
  const d = explorer.state.docs[i];
  $("#editor").value = d.text;
  $("#editor").readOnly = !d.editable;
  paintBackdrop();
}

// ---- the ask bar: completion of relation names and constants -----------------------------

const FORMS = ["check ", "list ", "who "];
function complete() {
  const v = $("#ask").value;
  const m = v.match(/^(.*?)([A-Za-z0-9_.\/"-]*)$/s);
  const head = m[1], word = m[2].replace(/^"/, "");
  const voc = explorer.state ? explorer.state.vocabulary : { relations: [], constants: [] };
  const names = voc.relations.map((r) => r.split("(")[0] + "(");
  const pool = head.trim() === "" ? [...FORMS, ...names] : [...names, ...voc.constants];
  const hits = [];
  for (const c of pool) {
    if (c.startsWith(word) && c !== word) hits.push(c);
    if (hits.length >= 40) break;
  }
  const dl = $("#ask-completions");
  dl.replaceChildren(...hits.map((h) => el("option", { value: head + h })));
}

function renderAnswer(a) {
  explorer.answer = a;
  const box = $("#answer");
  box.replaceChildren();
  const cls = a.kind === "check" ? (a.value ? "allow" : "deny") : "";
  box.append(el("div", { class: cls, id: "summary" }, a.summary));
  if (a.reasons && a.reasons.length) box.append(el("div", {}, "by " + a.reasons.join(", ")));
  for (const w of a.warnings || []) box.append(el("div", {}, `warning[${w.code}]: ${w.message}`));
  if (a.rows && a.rows.length) {
    const ul = el("ul", { id: "rows" });
    for (const r of a.rows) {
      ul.append(el("li", {}, typeof r === "string" ? r :
        Object.entries(r).map(([k, v]) => `${k} = ${v}`).join(", ")));
    }
    box.append(ul);
    if (a.more) box.append(el("div", {}, `and ${a.more} more`));
  }
  drawGraph(a.graph || null);
  for (const f of explorer.answerHooks) f(a);  // other panes' reactions (suggest.js)
}

async function askNow(e) {
  if (e) e.preventDefault();
  const question = $("#ask").value;
  const r = await api("POST", "/api/ask", { question });
  if (!r.ok) {
    const errs = (r.json && r.json.errors) || [];
    $("#answer").replaceChildren(...errs.map((d) => el("div", { class: "deny" },
      `error[${d.code}]: ${d.message}` + (d.help ? ` (help: ${d.help})` : ""))));
    drawGraph(null);
    return;
  }
  renderAnswer(r.json);
}

// ---- proofs as graphs -------------------------------------------------------------------

// a label's box in the 11px monospace font the nodes use (explicit sizes: dagre lays out
// with them, and Cytoscape's `width: label` is deprecated)
function textBox(label) {
  const lines = String(label || "").split("\n");
  return { w: Math.max(...lines.map((l) => l.length)) * 6.7 + 4, h: lines.length * 13 + 2 };
}

const STYLE = [
  { selector: "node", style: { "shape": "round-rectangle", "label": "data(shown)",
    "text-wrap": "wrap", "text-valign": "center", "font-size": 11, "font-family": "monospace",
    "width": (n) => textBox(n.data("shown")).w, "height": (n) => textBox(n.data("shown")).h,
    "padding": 6, "border-width": 1,
    "background-color": "#e3eefc", "border-color": "#5b7db1" } },
  { selector: "node[cls = 'fact']", style: { "background-color": "#e3f3e4", "border-color": "#2e7d32" } },
  { selector: "node[cls = 'holds']", style: { "background-color": "#e3f3e4", "border-color": "#2e7d32" } },
  { selector: "node[cls = 'rule']", style: { "shape": "round-rectangle", "background-color": "#f1e7fb",
    "border-color": "#7b3fb8", "font-style": "italic", "padding": 3 } },
  { selector: "node[cls = 'under']", style: { "background-color": "#eef0f2", "border-color": "#78828c",
    "border-style": "dashed" } },
  { selector: "node[cls = 'failed']", style: { "background-color": "#fde4e4", "border-color": "#c62828",
    "border-width": 2, "color": "#7f0000" } },
  { selector: "node[cls = 'note']", style: { "background-color": "#f5f5f5", "border-color": "#9e9e9e",
    "border-style": "dotted", "color": "#555" } },
  { selector: "node:selected", style: { "border-width": 3, "border-color": "#ffb300" } },
  { selector: "node.hidden", style: { "display": "none" } },
  { selector: "node.collapsed", style: { "border-width": 3, "border-style": "double" } },
  { selector: "edge", style: { "width": 1.2, "line-color": "#9aa3ad", "target-arrow-shape": "triangle",
    "target-arrow-color": "#9aa3ad", "curve-style": "bezier", "arrow-scale": 0.8 } },
  { selector: "edge[label]", style: { "label": "data(label)", "font-size": 9 } },
];

const DEPTH = 2;
const LAYOUT = { name: "dagre", rankDir: "LR", nodeSep: 10, rankSep: 40, edgeSep: 6,
                 padding: 12 };

const READABLE = 0.55;  // the smallest zoom whose 11px labels stay readable

function relayout(cy) {
  const shown = cy.nodes().not(".hidden");
  cy.nodes().forEach((n) => {
    const closed = !n.hasClass("hidden") && n.outgoers("node.hidden").length > 0;
    const below = closed ? n.successors("node.hidden").length : 0;
    n.toggleClass("collapsed", below > 0);
    n.data("shown", below ? `${n.data("label")}\n⊕ ${below} more below` : n.data("label"));
  });
  // a node shown again keeps the empty box it had while hidden unless measured afresh: dagre
  // would then stack the opened nodes on top of each other
  shown.forEach((n) => { n.boundingBox({ useCache: false }); });
  shown.union(shown.edgesWith(shown)).layout(LAYOUT).run();
  cy.fit(shown, 12);
  // a proof too large to read whole starts at its goal, readable; the rest pans into view
  if (cy.zoom() < READABLE) {
    const goal = shown.filter((n) => n.incomers("node").not(".hidden").length === 0)[0] || shown[0];
    cy.zoom(READABLE);
    cy.pan({ x: 12 - goal.boundingBox().x1 * READABLE, y: cy.height() / 2 - goal.position("y") * READABLE });
  }
  explorer.shownNodes = shown.length;
}

function expandAll() {
  if (!explorer.cy) return;
  explorer.cy.nodes().removeClass("hidden");
  relayout(explorer.cy);
}

// a node's details, as the detail line (a tap, or a11y.js's keys) and the proof list say them
function nodeDetail(d) {
  return [d.fact || d.label, d.why && `[${d.why}]`, d.at && `at ${d.at}`,
    d.bindings && `with ${d.bindings}`, d.doc, d.origin && `fact at ${d.origin}`,
    d.steps && `${d.steps} hierarchy step(s)`].filter(Boolean).join("  ·  ");
}
explorer.nodeDetail = nodeDetail;

function drawGraph(g) {
  const t0 = performance.now();
  if (explorer.cy) { explorer.cy.destroy(); explorer.cy = null; window.cy = null; }
  const box = $("#cy");
  if (!g) { box.setAttribute("aria-label", "no proof graph"); return; }
  for (const n of g.nodes) n.data.shown = n.data.label;
  const cy = cytoscape({
    container: box, elements: { nodes: g.nodes, edges: g.edges }, style: STYLE,
    layout: { name: "preset" }, wheelSensitivity: 0.3, minZoom: 0.1, maxZoom: 1.6,
  });
  // a large proof shows its top DEPTH levels first; a node marked ⊕ opens one more level
  cy.nodes().forEach((n) => { n.toggleClass("hidden", n.data("depth") > DEPTH); });
  relayout(cy);
  cy.on("tap", "node", (e) => {
    const n = e.target, d = n.data();
    if (n.hasClass("collapsed")) {
      n.successors().nodes().filter((m) => m.data("depth") <= d.depth + 1).removeClass("hidden");
      relayout(cy);
    }
    $("#node-detail").textContent = nodeDetail(d);
  });
  explorer.cy = window.cy = cy;
  explorer.drawMs = performance.now() - t0;
  box.setAttribute("aria-label", `${g.holds ? "proof" : "why-not"} graph of ${g.goal}: ` +
    `${g.nodes.length} nodes`);
}

// ---- pins -------------------------------------------------------------------------------

function renderPins(pins) {
  const ul = $("#pins");
  ul.replaceChildren();
  for (const p of pins) {
    const li = el("li", { class: p.flipped ? "flipped" : "", "data-pin": String(p.id) });
    li.append(el("span", { class: "q" }, p.question));
    li.append(el("span", { class: "a" }, p.error ? `error: ${p.error}` : p.summary));
    if (p.flipped) {
      li.append(el("span", { class: "badge" }, "flipped"));
      if (p.added.length) li.append(el("span", {}, "+" + p.added.join(" +")));
      if (p.removed.length) li.append(el("span", {}, "-" + p.removed.join(" -")));
    }
    li.append(el("button", { type: "button", "aria-label": `ask ${p.question}`,
      onclick: () => { $("#ask").value = p.question; askNow(); } }, "Ask"));
    li.append(el("button", { type: "button", "aria-label": `unpin ${p.question}`,
      onclick: async () => { const r = await api("DELETE", `/api/pins/${p.id}`); if (r.ok) renderPins(r.json.pins); } }, "Unpin"));
    ul.append(li);
  }
  if (!pins.length) ul.append(el("li", {}, "no pinned questions: ask one, then Pin"));
}

async function pinNow() {
  const r = await api("POST", "/api/pins", { question: $("#ask").value });
  if (r.ok) renderPins(r.json.pins);
  else $("#answer").replaceChildren(...((r.json && r.json.errors) || []).map((d) =>
    el("div", { class: "deny" }, `error[${d.code}]: ${d.message}`)));
}

// ---- facts ------------------------------------------------------------------------------

function renderRelations(rels) {
  const sel = $("#relation"), keep = sel.value;
  sel.replaceChildren(...rels.map((r) => el("option", { value: r.name }, `${r.name} (${r.rows})`)));
  if (rels.some((r) => r.name === keep)) sel.value = keep;
  loadFacts();
}

let factsTimer = null;
async function loadFacts() {
  const rel = $("#relation").value;
  if (!rel) return;
  const q = new URLSearchParams({ rel, contains: $("#filter").value });
  const r = await api("GET", `/api/facts?${q}`);
  if (!r.ok) return;
  const t = r.json;
  const head = el("tr", {}, ...t.columns.map((c) => el("th", { scope: "col" }, c)));
  const rows = t.rows.map((row) => el("tr", {}, ...row.map((c) => el("td", {}, c))));
  $("#facts").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
  $("#matched").textContent = `${t.matched} row${t.matched === 1 ? "" : "s"}` +
    (t.matched > t.rows.length ? ` (first ${t.rows.length} shown)` : "");
  for (const f of explorer.factsHooks) f(t);  // static/facts.js: the edit controls
}

// ---- start ------------------------------------------------------------------------------

async function start() {
  const r = await api("GET", "/api/state");
  explorer.state = r.json;
  const sel = $("#doc");
  sel.replaceChildren(...r.json.docs.map((d) => el("option", { value: String(d.doc) },
    d.name + (d.editable ? "" : " (read only)"))));
  const first = r.json.docs.findIndex((d) => d.editable);
  selectDoc(first < 0 ? 0 : first);
  renderDiagnostics(r.json.diagnostics, true);
  renderPins(r.json.pins);
  renderRelations(r.json.relations);
  sel.addEventListener("change", () => selectDoc(Number(sel.value)));
  const ta = $("#editor");
  ta.addEventListener("input", () => { paintBackdrop(); scheduleEdit(); });
  ta.addEventListener("scroll", syncScroll);
  for (const ev of ["keyup", "click", "focus"]) ta.addEventListener(ev, showCaret);
  $("#ask-form").addEventListener("submit", askNow);
  $("#ask").addEventListener("input", complete);
  $("#pin-go").addEventListener("click", pinNow);
  $("#expand").addEventListener("click", expandAll);
  $("#relation").addEventListener("change", loadFacts);
  $("#filter").addEventListener("input", () => { clearTimeout(factsTimer); factsTimer = setTimeout(loadFacts, 200); });
  complete();
  document.body.dataset.ready = "1";
}

// what other panes call (static/coverage.js, filters.js, facts.js)
explorer.factsHooks = [];
Object.assign(explorer, { api, el, renderAnswer, renderPins, renderRelations, loadFacts,
                          selectDoc, goTo });

if (window.cytoscape && window.cytoscapeDagre) cytoscape.use(cytoscapeDagre);
start();
