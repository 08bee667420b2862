// grantlog explorer: editing the facts pane's table (POST /api/facts/edit): a Delete button on
// each row and a row of inputs to add one, for base relations only (a derived relation's rows
// are read only). Without a store the edits live in the page's workspace; with --store each
// is a transaction in the store, recorded with the reason given here.
"use strict";

(function () {
  const ex = window.explorer;
  const $ = (sel) => document.querySelector(sel);

  function say(text, bad) {
    const s = $("#facts-edit-status");
    s.textContent = text;
    s.className = bad ? "deny" : "";
  }

  async function write(rel, change) {
    const r = await ex.api("POST", "/api/facts/edit",
      { rel, ...change, reason: $("#facts-reason").value.trim() || null });
    if (!r.ok) {
      say(((r.json && r.json.errors) || []).map((d) => `error[${d.code}]: ${d.message}` +
        (d.help ? ` (help: ${d.help})` : "")).join("; "), true);
      return false;
    }
    const what = change.insert ? `added ${rel}(${change.insert[0].join(", ")})` :
      `deleted ${rel}(${change.retract[0].join(", ")})`;
    say(`${what}: revision ${r.json.revision}`, false);
    ex.renderPins(r.json.pins);
    ex.renderRelations(r.json.relations);  // reloads the table
    return true;
  }

  ex.factsHooks.push((t) => {
    const table = $("#facts");
    if (!t.editable) {
      say(`${t.name}: rules derive it; its rows are read only`, false);
      return;
    }
    table.querySelector("thead tr").append(ex.el("th", { scope: "col" },
      ex.el("span", { class: "visually-hidden" }, "edit")));
    for (const [i, tr] of [...table.querySelectorAll("tbody tr")].entries()) {
      const row = t.rows[i];
      tr.append(ex.el("td", {}, ex.el("button", { type: "button", class: "del",
        "aria-label": `delete ${t.name}(${row.join(", ")})`,
        onclick: () => write(t.name, { retract: [row] }) }, "Delete")));
    }
    const inputs = t.columns.map((c) => ex.el("input", { type: "text", spellcheck: "false",
      class: "new-cell", "aria-label": `new ${t.name} row: ${c}`, placeholder: c }));
    const add = ex.el("button", { type: "button", id: "facts-add", onclick: async () => {
      if (await write(t.name, { insert: [inputs.map((x) => x.value)] })) {
        for (const x of inputs) x.value = "";
      }
    } }, "Add");
    for (const x of inputs) {
      x.addEventListener("keydown", (e) => { if (e.key === "Enter") add.click(); });
    }
    table.append(ex.el("tfoot", {}, ex.el("tr", { class: "new-row" },
      ...inputs.map((x) => ex.el("td", {}, x)), ex.el("td", {}, add))));
  });
})();
