// grantlog explorer: the what-if pane. A draft of the rules beside the served ones (the served
// text keeps answering the ask bar); "Diff" shows the decisions gained and lost per subject and
// resource (POST /api/whatif/diff, paged), each opening its proof in the answer pane's graph
// (POST /api/whatif/proof: the draft's proof of a gained decision, the served one's of a lost
// one); "Replay the log" lists the logged requests the draft would answer otherwise
// (POST /api/whatif/replay). Uses explorer.js's `api`, `el`, `renderAnswer` and `explorer`.
"use strict";

(() => {
  const q = (sel) => document.querySelector(sel);
  const whatif = { drafts: {}, doc: 0, offset: 0, limit: 25, diff: null, replay: null, runs: 0 };
  window.whatif = whatif;

  function errors(r) {
    return ((r.json && r.json.errors) || []).map((d) =>
      `error[${d.code}]: ${d.message}` + (d.help ? ` (help: ${d.help})` : "")).join("; ");
  }

  function status(text) { q("#whatif-status").textContent = text; }

  function showDiagnostics(list) {
    const ul = q("#whatif-diagnostics");
    ul.replaceChildren(...list.map((d) => el("li", { class: d.severity, "data-code": d.code },
      `${d.file}:${d.line}:${d.col}: ${d.severity}[${d.code}]: ${d.message}`)));
  }

  function selectDraft(i) {
    whatif.doc = i;
    q("#whatif-doc").value = String(i);
    const d = explorer.state.docs[i];
    if (!(i in whatif.drafts)) whatif.drafts[i] = d.text;
    q("#whatif-editor").value = whatif.drafts[i];
    q("#whatif-editor").readOnly = !d.editable;
  }

  function body(extra) {
    const drafts = {};
    for (const [i, text] of Object.entries(whatif.drafts)) {
      if (explorer.state.docs[i].editable) drafts[i] = text;
    }
    return Object.assign({ drafts }, extra || {});
  }

  async function proof(fact, side) {
    const r = await api("POST", "/api/whatif/proof", { fact, side });
    if (!r.ok) { status(errors(r)); return; }
    const a = r.json;
    const holds = a.graph ? a.graph.holds : false;
    a.summary = `${side === "draft" ? "under the draft" : "as served"}: ${fact} ` +
      (holds ? "holds" : "does not hold");
    renderAnswer(a);
    q("#whatif-shown").textContent = a.summary + " (the graph is in the Answer pane)";
  }

  function change(c, side) {
    const sign = c.sign === "+" ? "+" : "−";
    const label = `${side === "draft" ? "gained" : "lost"} ${c.what || c.fact}: show its proof ` +
      (side === "draft" ? "under the draft" : "as served");
    return el("button", { type: "button", class: `chg ${side === "draft" ? "gained" : "lost"}`,
      "data-fact": c.fact, "aria-label": label, title: c.fact,
      onclick: () => proof(c.fact, side) }, `${sign}${c.what || c.fact}`);
  }

  function renderDiff(d) {
    whatif.diff = d;
    const box = q("#whatif-result");
    box.replaceChildren();
    const c = d.counts;
    box.append(el("div", { id: "whatif-summary" },
      `${d.relation}: ${c.gained} gained, ${c.lost} lost, over ${c.groups} ` +
      `(subject, resource) pair${c.groups === 1 ? "" : "s"} of ${c.subjects} ` +
      `subject${c.subjects === 1 ? "" : "s"}`));
    if (!d.groups.length) {
      box.append(el("div", {}, c.groups ? "no more pairs" : "the draft decides as the served rules do"));
      return;
    }
    const cols = d.columns.length >= 3 ? [d.columns[0], d.columns[d.columns.length - 1]] :
      ["subject", "resource"];
    const head = el("tr", {}, ...[...cols, "gained (draft)", "lost (served)"].map((h) =>
      el("th", { scope: "col" }, h)));
    const rows = d.groups.map((g) => el("tr", {},
      el("td", {}, g.subject), el("td", {}, g.resource),
      el("td", {}, ...g.gained.map((x) => change(x, "draft"))),
      el("td", {}, ...g.lost.map((x) => change(x, "served")))));
    box.append(el("div", { class: "table-wrap" }, el("table", { id: "whatif-diff" },
      el("caption", { class: "visually-hidden" }, "decisions gained and lost by the draft"),
      el("thead", {}, head), el("tbody", {}, ...rows))));
    const nav = el("div", { class: "row" });
    const first = d.offset + 1, last = d.offset + d.groups.length;
    nav.append(el("span", { id: "whatif-page" }, `pairs ${first}–${last} of ${c.groups}` +
      (d.left_out ? ` (${d.left_out} left out of this page)` : "")));
    if (d.offset > 0) {
      nav.append(el("button", { type: "button", id: "whatif-prev",
        onclick: () => runDiff(Math.max(0, d.offset - d.limit)) }, "Previous"));
    }
    if (last < c.groups) {
      nav.append(el("button", { type: "button", id: "whatif-next",
        onclick: () => runDiff(last) }, "Next"));
    }
    box.append(nav);
  }

  async function runDiff(offset) {
    whatif.offset = offset || 0;
    status("comparing…");
    const r = await api("POST", "/api/whatif/diff", body({ offset: whatif.offset, limit: whatif.limit }));
    whatif.runs++;
    if (!r.ok) { status(errors(r)); return; }
    if (!r.json.compiled) {
      showDiagnostics(r.json.diagnostics);
      status("the draft does not compile");
      q("#whatif-result").replaceChildren();
      return;
    }
    showDiagnostics(r.json.warnings || []);
    status(`compared: served policy ${r.json.served}, draft ${r.json.draft}`);
    renderDiff(r.json);
  }

  async function runReplay() {
    status("replaying the decision log…");
    const r = await api("POST", "/api/whatif/replay", body());
    const ul = q("#whatif-replay");
    ul.replaceChildren();
    if (!r.ok) { status(errors(r)); return; }
    if (!r.json.compiled) {
      showDiagnostics(r.json.diagnostics);
      status("the draft does not compile");
      return;
    }
    const j = r.json;
    whatif.replay = j;
    const word = (b) => (b ? "ALLOW" : "DENY");
    for (const c of j.changed) {
      const li = el("li", { "data-goal": c.goal });
      li.append(el("span", { class: c.draft ? "allow" : "deny" }, `${word(c.was)} → ${word(c.draft)}`));
      li.append(el("span", { class: "q" }, c.goal));
      li.append(el("span", { class: "at" }, `${c.at}` + (c.request_id ? `, request ${c.request_id}` : "") +
        (c.served !== c.was ? `; served now: ${word(c.served)}` : "")));
      li.append(el("button", { type: "button", "aria-label": `why ${c.goal} under the draft`,
        onclick: () => proof(c.goal, "draft") }, "Why"));
      ul.append(li);
    }
    status(`${j.log}: ${j.replayed} replayed, ${j.count} would change` +
      (j.left_out ? ` (${j.left_out} not listed)` : "") +
      (j.masked ? `, ${j.masked} masked` : "") +
      (j.not_decisions ? `, ${j.not_decisions} reads or lookups` : ""));
    if (!j.changed.length) ul.append(el("li", {}, "no logged request would be answered otherwise"));
  }

  function start() {
    if (!window.explorer || !explorer.state) { setTimeout(start, 50); return; }
    const sel = q("#whatif-doc");
    sel.replaceChildren(...explorer.state.docs.map((d, i) => el("option", { value: String(i) },
      d.name + (d.editable ? "" : " (read only)"))));
    const first = explorer.state.docs.findIndex((d) => d.editable);
    selectDraft(first < 0 ? 0 : first);
    sel.addEventListener("change", () => selectDraft(Number(sel.value)));
    q("#whatif-editor").addEventListener("input", (e) => { whatif.drafts[whatif.doc] = e.target.value; });
    q("#whatif-reset").addEventListener("click", () => {
      delete whatif.drafts[whatif.doc];
      selectDraft(whatif.doc);
      status("the draft is the served text again");
    });
    q("#whatif-go").addEventListener("click", () => runDiff(0));
    q("#whatif-replay-go").addEventListener("click", runReplay);
    document.body.dataset.whatifReady = "1";
  }

  start();
})();
