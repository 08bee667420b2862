// grantlog explorer: the filters pane. The data filter of a subject and an operation (POST
// /api/filter, as `grantlog filter`): its conditions, and SQL over the catalog table the
// layout fields describe, in the dialect chosen.
"use strict";

(function () {
  const ex = window.explorer;
  const $ = (sel) => document.querySelector(sel);
  const FIELDS = ["table", "schema", "id", "type", "parent", "path", "path_separator"];

  // a condition's JSON as indented lines: {"and": [...]}, {"or": [...]}, {"not": c}, leaves
  function show(c, depth) {
    const pad = "  ".repeat(depth);
    if (c === true || c === false) return [pad + String(c)];
    const [[k, v]] = Object.entries(c);
    if (k === "and" || k === "or") {
      return [pad + k.toUpperCase(), ...v.flatMap((x) => show(x, depth + 1))];
    }
    if (k === "not") return [pad + "NOT", ...show(v, depth + 1)];
    return [pad + `${k} ${Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : v}`];
  }

  async function run(e) {
    if (e) e.preventDefault();
    const layout = {};
    for (const f of FIELDS) {
      const v = $(`#filter-${f}`).value.trim();
      layout[f] = v === "" ? null : v;
    }
    if (layout.path_separator === null) delete layout.path_separator;
    const body = { subject: $("#filter-subject").value.trim(),
      operation: $("#filter-operation").value.trim(), type: $("#filter-rtype").value.trim() || null,
      dialect: $("#filter-dialect").value, where: $("#filter-where").checked, layout };
    const r = await ex.api("POST", "/api/filter", body);
    if (!r.ok) {
      const errs = (r.json && r.json.errors) || [];
      $("#filter-status").textContent = errs.map((d) => `error[${d.code}]: ${d.message}` +
        (d.help ? ` (help: ${d.help})` : "")).join("; ");
      $("#filter-conditions").textContent = "";
      $("#filter-sql").textContent = "";
      return;
    }
    ex.filter = r.json;
    $("#filter-status").textContent = `${body.subject} may ${body.operation} the resources ` +
      `that meet (${r.json.dialect}):` + (r.json.warnings.length ? ` — ${r.json.warnings.map((w) => w.message).join("; ")}` : "");
    $("#filter-conditions").textContent = show(r.json.conditions, 0).join("\n");
    $("#filter-sql").textContent = r.json.sql;
  }

  async function start() {
    const r = await ex.api("GET", "/api/filter/options");
    if (!r.ok) return;
    $("#filter-dialect").replaceChildren(...r.json.dialects.map((d) =>
      ex.el("option", { value: d }, d)));
    $("#filter-dialect").value = "postgres";
    for (const f of FIELDS) $(`#filter-${f}`).value = r.json.layout[f] || "";
  }

  $("#filter-form").addEventListener("submit", run);
  $("#filter-dialect").addEventListener("change", () => { if (ex.filter) run(); });
  ex.runFilter = run;
  start();
})();
