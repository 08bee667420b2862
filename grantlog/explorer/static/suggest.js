// grantlog explorer: the why-not's suggested changes. After a check or a goal that does not
// hold is drawn (explorer.answerHooks), the smallest changes of facts that would flip it are
// listed under the graph (POST /api/suggest: each checked by running it on a copy), and the
// failed premises each one repairs are marked in the why-not graph (✎ #N and an orange border;
// hovering or focusing a suggestion lights its premises up). "Try it" applies one in memory
// (POST /api/suggest/try) and asks again; "Undo" puts the facts back. Uses explorer.js's
// `api`, `el`, `askNow`, `relayout`, `renderPins` and `explorer`.
"use strict";

(() => {
  const q = (sel) => document.querySelector(sel);
  const sg = { seq: 0, result: null, applied: null, answer: null };
  window.suggest = sg;

  const STYLE = [
    ["node.repairs", { "border-color": "#ef6c00", "border-width": 3, "border-style": "double" }],
    ["node.repairs-hot", { "background-color": "#ffe0b2", "border-width": 4 }],
  ];

  function errors(r) {
    return ((r.json && r.json.errors) || []).map((d) =>
      `error[${d.code}]: ${d.message}` + (d.help ? ` (help: ${d.help})` : "")).join("; ");
  }

  function status(text) { q("#suggest-status").textContent = text; }

  function reask(question) {
    q("#ask").value = question;
    askNow();
  }

  function applied() {
    const ap = sg.applied;
    if (!ap) return null;
    return el("div", { class: "applied", id: "suggest-applied", role: "status" },
      `Tried (in memory): ${ap.sentence} `,
      el("button", { type: "button", id: "suggest-undo", onclick: undo,
        "aria-label": `undo: ${ap.sentence}` }, "Undo"));
  }

  function hot(i, on) {
    const cy = explorer.cy;
    if (!cy || !sg.result || explorer.answer !== sg.answer) return;
    for (const [id, nums] of Object.entries(sg.result.marks || {})) {
      if (nums.includes(i)) cy.getElementById(id).toggleClass("repairs-hot", on);
    }
  }

  function mark(result) {
    const cy = explorer.cy;
    if (!cy || !result.marks) return;
    const s = cy.style();
    for (const [sel, css] of STYLE) s.selector(sel).style(css);
    s.update();
    for (const [id, nums] of Object.entries(result.marks)) {
      const n = cy.getElementById(id);
      if (!n.length) continue;
      n.addClass("repairs");
      n.data("label", `${n.data("label")}\n✎ ${nums.map((i) => `#${i + 1}`).join(" ")}`);
    }
    relayout(cy);
  }

  function item(s, i, a) {
    const facts = el("ul", { class: "facts" }, ...s.edits.map((e) =>
      el("li", { class: e.op }, `${e.op === "insert" ? "+" : "−"} ${e.fact}`)));
    const btn = el("button", { type: "button", class: "try", onclick: () => tryIt(s, a),
      "aria-label": `Try it: suggestion ${i + 1}, ${s.sentence}` }, "Try it");
    const li = el("li", { "data-index": String(i), tabindex: "-1" },
      el("div", { class: "sentence" }, s.sentence), facts, btn);
    li.addEventListener("mouseenter", () => hot(i, true));
    li.addEventListener("mouseleave", () => hot(i, false));
    li.addEventListener("focusin", () => hot(i, true));
    li.addEventListener("focusout", () => hot(i, false));
    return li;
  }

  function render(result, a) {
    const list = q("#suggest-list");
    const found = result.suggestions;
    const cut = result.cut_short ? ` (search cut short: ${result.cut_short} limit)` : "";
    status(found.length ?
      `${found.length} change${found.length === 1 ? "" : "s"}, smallest first, each checked ` +
      `by running it${cut}` :
      `no change of a few facts found that would make it hold${cut}`);
    list.replaceChildren(...found.map((s, i) => item(s, i, a)));
  }

  async function onAnswer(a) {
    const seq = ++sg.seq;
    const box = q("#suggest");
    const note = applied();
    const old = q("#suggest-applied");
    if (old) old.remove();
    if (note) box.insertBefore(note, q("#suggest-status"));
    sg.result = null;
    sg.answer = a;
    const asks = a && a.graph && !a.graph.holds && (a.kind === "check" || a.kind === "goal");
    q("#suggest-list").replaceChildren();
    if (!asks) {
      status("");
      box.hidden = !note;
      return;
    }
    box.hidden = false;
    status("finding the smallest changes that would make it hold…");
    const r = await api("POST", "/api/suggest", { question: a.question });
    if (seq !== sg.seq) return;  // another answer came meanwhile
    if (!r.ok) { status(errors(r)); return; }
    sg.result = r.json;
    render(r.json, a);
    if (explorer.answer === a) mark(r.json);
  }

  async function tryIt(s, a) {
    status(`trying: ${s.sentence}…`);
    const edits = s.edits.map((e) => ({ op: e.op, rel: e.rel, row: e.row }));
    const r = await api("POST", "/api/suggest/try", { edits });
    if (!r.ok) { status(errors(r)); return; }
    sg.applied = { sentence: s.sentence, undo: r.json.undo, question: a.question };
    if (r.json.pins) renderPins(r.json.pins);
    reask(a.question);
  }

  async function undo() {
    const ap = sg.applied;
    if (!ap) return;
    if (ap.undo.length) {
      const r = await api("POST", "/api/suggest/try", { edits: ap.undo });
      if (!r.ok) { status(errors(r)); return; }
      if (r.json.pins) renderPins(r.json.pins);
    }
    sg.applied = null;
    reask(ap.question);
  }

  sg.undo = undo;
  explorer.answerHooks.push(onAnswer);
})();
