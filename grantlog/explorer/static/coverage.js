// grantlog explorer: the tests pane. Runs the rule files' `test` blocks (POST /api/tests, as
// `grantlog test --coverage`), shows pass or fail per block with the failing expectations (a
// click asks its why or why-not of the test's facts: POST /api/tests/why, drawn in the answer
// pane), and the rules no test fired: listed, and marked `unfired` on their lines in the
// editor (explorer.lineMarks: the backdrop's line elements keep the class).
"use strict";

(function () {
  const ex = window.explorer;
  const $ = (sel) => document.querySelector(sel);
  let unfired = [];  // {doc, line, end_line} of the rules no test fired
  let stale = false;

  ex.lineMarks.push((n) => (unfired.some((u) => u.doc === ex.doc && n >= u.line &&
    n <= u.end_line) ? "unfired" : ""));

  function where(x) { return `${x.file}:${x.line}`; }

  function jump(x) {
    if (x.doc === null || x.doc === undefined) return;
    if (ex.doc !== x.doc) ex.selectDoc(x.doc);
    ex.goTo(x.line, 1);
  }

  async function why(test, e) {
    $("#tests-status").textContent = `asking ${e.text} …`;
    const r = await ex.api("POST", "/api/tests/why", { test: test.index, expect: e.index });
    if (!r.ok) {
      $("#tests-status").textContent = ((r.json && r.json.errors) || []).map((d) =>
        `error[${d.code}]: ${d.message}`).join("; ");
      return;
    }
    $("#tests-status").textContent = `${e.text} in test “${test.name}”: ${r.json.summary}`;
    ex.renderAnswer(r.json);
    $("#answer-pane").scrollIntoView({ block: "nearest" });
  }

  function render(res) {
    const ul = $("#tests");
    ul.replaceChildren();
    for (const t of res.tests) {
      const li = ex.el("li", { class: t.passed ? "pass" : "fail", "data-test": String(t.index) });
      li.append(ex.el("span", { class: "verdict" }, t.passed ? "PASS" : "FAIL"), " ",
        ex.el("button", { type: "button", class: "link", title: "show it in the editor",
          "aria-label": `go to test ${t.name} at ${where(t)}`, onclick: () => jump(t) }, t.name),
        ex.el("span", { class: "at" }, ` ${where(t)}`));
      if (!t.passed) {
        const sub = ex.el("ul", { class: "expects" });
        for (const e of t.expects.filter((x) => !x.passed)) {
          sub.append(ex.el("li", { class: "fail" },
            ex.el("button", { type: "button", class: "why",
              "aria-label": `why: ${e.text} in test ${t.name}`, onclick: () => why(t, e) },
              e.text.startsWith("not ") ? "why" : "why not"),
            ` ${e.text}: ${e.message} (line ${e.line})`));
        }
        li.append(sub);
      }
      ul.append(li);
    }
    if (!res.tests.length) ul.append(ex.el("li", {}, "no test blocks in these files"));
    const c = res.coverage;
    unfired = c.missed.filter((m) => m.doc !== null);
    const miss = $("#unfired");
    miss.replaceChildren(...c.missed.map((m) => {
      const go = ex.el("button", { type: "button", class: "link",
        "aria-label": `go to rule ${m.rule} at ${where(m)}`, onclick: () => jump(m) }, m.rule);
      go.disabled = m.doc === null;  // a shipped file the page does not show
      return ex.el("li", { class: "unfired" }, go, ex.el("span", { class: "at" }, ` ${where(m)}`));
    }));
    const pct = c.rules ? (100 * c.fired / c.rules).toFixed(1) : "100.0";
    $("#tests-status").textContent = `${res.passed} passed, ${res.failed} failed; ` +
      `${c.fired}/${c.rules} rules fired in some test (${pct}%), ${c.missed.length} not`;
    stale = false;
    window.paintBackdrop();
  }

  async function runTests() {
    $("#tests-status").textContent = "running the tests …";
    $("#tests-go").disabled = true;
    try {
      const r = await ex.api("POST", "/api/tests", {});
      if (!r.ok) {
        $("#tests-status").textContent = ((r.json && r.json.errors) || []).map((d) =>
          `error[${d.code}]: ${d.message}`).join("; ");
        return;
      }
      ex.tests = r.json;
      render(r.json);
    } finally {
      $("#tests-go").disabled = false;
    }
  }

  $("#tests-go").addEventListener("click", runTests);
  // an edit moves lines: the marks would point at the wrong ones until the tests run again
  $("#editor").addEventListener("input", () => {
    if (stale || !unfired.length) return;
    stale = true;
    unfired = [];
    $("#tests-status").textContent += " (the rules changed: run the tests again)";
  });
  ex.runTests = runTests;
})();
