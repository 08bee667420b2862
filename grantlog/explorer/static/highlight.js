// grantlog explorer: the rules editor's colours from the TextMate grammar VS Code uses
// (editors/vscode/syntaxes/grantlog.tmLanguage.json, copied to static/vendor by `make
// explorer-assets`), tokenized in the page by shiki's core with its JavaScript regex engine
// (static/vendor/shiki-core.min.js: no wasm, no network).
//
// `grantlogHighlight.lines(lines)` gives each line's HTML: one <span data-scope="…"> per token
// (the token's innermost scope), plain text where only the file's scope applies. Tokenizing is
// incremental: a line is re-tokenized only when its text or the grammar state it starts in
// changed (an edit re-tokenizes the edited lines, and the lines after them only while the
// state they end in differs: an opened string or test block runs on), so a keystroke in a
// long file costs a line or two. explorer.js's paintBackdrop gives each line its classes (the
// diagnostics' marks, other panes' lineMarks) and `paint` draws the lines that changed.
"use strict";

(function () {
  // maxLines: a longer document (a large facts file) is shown uncoloured
  const hl = { ready: false, grammar: null, cache: [], tokenized: 0, ms: 0, maxLines: 20000 };
  window.grantlogHighlight = hl;

  function escapeHtml(s) {
    return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }

  function same(a, b) {
    return a === b || (a !== null && b !== null && a.equals(b));
  }

  // one line: its HTML and the grammar state it ends in
  function tokenize(text, state) {
    const r = hl.grammar.tokenizeLine(text, state);
    let html = "";
    for (const t of r.tokens) {
      const piece = escapeHtml(text.slice(t.startIndex, t.endIndex));
      const scope = t.scopes[t.scopes.length - 1];
      html += t.scopes.length > 1 ? `<span data-scope="${scope}">${piece}</span>` : piece;
    }
    hl.tokenized++;
    return { text, begin: state, end: r.ruleStack, html };
  }

  // every line's HTML, re-using the lines an edit left alone (the common head and tail)
  hl.lines = function (lines) {
    if (!hl.grammar || lines.length > hl.maxLines) return lines.map(escapeHtml);
    const t0 = performance.now();
    const old = hl.cache, n = lines.length, m = old.length;
    let head = 0;
    while (head < n && head < m && old[head].text === lines[head]) head++;
    let tail = 0;
    while (tail < n - head && tail < m - head && old[m - 1 - tail].text === lines[n - 1 - tail]) tail++;
    const out = old.slice(0, head);
    let state = head ? out[head - 1].end : null;
    for (let i = head; i < n; i++) {
      const j = i - n + m; // the same line's index before the edit, in the common tail
      if (i >= n - tail && same(old[j].begin, state)) {
        for (let k = j; k < m; k++) out.push(old[k]);
        break;
      }
      const line = tokenize(lines[i], state);
      out.push(line);
      state = line.end;
    }
    hl.cache = out;
    hl.ms = performance.now() - t0;
    return out.map((l) => l.html);
  };

  // the backdrop's lines, one block element each (class `rows[i].cls`, data-line i + 1, the
  // coloured `rows[i].body`), then one empty line as the textarea has; only the lines whose
  // class or text changed are rebuilt (the unchanged tail is renumbered when lines were added
  // or removed), so a keystroke in a long file re-draws a line, not the file
  let painted = null;
  hl.paint = function (box, rows) {
    const html = (r, n) => `<span class="${r.cls}" data-line="${n}">${r.body || " "}</span>`;
    const kids = box.children;
    if (!painted || kids.length !== painted.length + 1 || !box.lastElementChild.matches(".end")) {
      box.innerHTML = rows.map((r, i) => html(r, i + 1)).join("") + '<span class="end"> </span>';
      painted = rows;
      return;
    }
    const same = (a, b) => a.cls === b.cls && a.body === b.body;
    const m = painted.length, n = rows.length;
    let head = 0;
    while (head < m && head < n && same(painted[head], rows[head])) head++;
    let tail = 0;
    while (tail < m - head && tail < n - head && same(painted[m - 1 - tail], rows[n - 1 - tail])) tail++;
    for (let i = m - tail - 1; i >= head; i--) kids[i].remove();
    const fresh = document.createElement("template");
    fresh.innerHTML = rows.slice(head, n - tail).map((r, k) => html(r, head + k + 1)).join("");
    box.insertBefore(fresh.content, kids[head]);
    if (n !== m) for (let i = n - tail; i < n; i++) kids[i].dataset.line = String(i + 1);
    painted = rows;
  };

  async function start() {
    const { createHighlighterCore, createJavaScriptRegexEngine } = window.shikiCore;
    const grammar = await (await fetch("/static/vendor/grantlog.tmLanguage.json")).json();
    const core = await createHighlighterCore({ langs: [grammar], themes: [],
                                               engine: createJavaScriptRegexEngine() });
    hl.grammar = core.getLanguage(grammar.name);
    hl.ready = true;
    if (typeof window.paintBackdrop === "function") window.paintBackdrop();
    document.body.dataset.highlight = "1";
  }

  if (window.shikiCore) {
    start().catch((e) => { document.body.dataset.highlight = "failed"; console.error(e); });
  } else {
    document.body.dataset.highlight = "unavailable";
  }
})();
