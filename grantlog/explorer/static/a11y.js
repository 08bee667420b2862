// grantlog explorer: keyboard-only use and screen readers (docs/explorer.md, "Keyboard and
// screen readers").
//
// - The proof graph (#cy) takes focus: the arrow keys move the selection between the nodes
//   shown (right: its premises, left: what it proves, up/down: its siblings), Enter or Space
//   opens a folded node (as a click does), Home goes back to the goal, Escape clears the
//   selection. The selected node is read out through #node-detail (aria-live).
// - "Proof as a list" shows the same proof as a nested list (the graph's text alternative),
//   every node with its details, rebuilt with each answer; Escape in it closes it.
// - Space does what Enter does on the focusable list items (the diagnostics), and "/" outside
//   a text field goes to the query bar.
"use strict";

(function () {
  const $ = (sel) => document.querySelector(sel);
  const ex = () => window.explorer;

  // ---- the graph by keyboard -------------------------------------------------------------

  function shown(cy) { return cy.nodes().not(".hidden"); }

  function root(cy) {
    const roots = shown(cy).filter((n) => n.incomers("node").not(".hidden").length === 0);
    return roots.length ? roots[0] : shown(cy)[0];
  }

  function byPosition(nodes) {
    return nodes.sort((a, b) => a.position("y") - b.position("y") || a.position("x") - b.position("x"));
  }

  function select(cy, n) {
    if (!n || !n.length) return;
    cy.nodes().unselect();
    n.select();
    const bb = cy.extent(), p = n.position();
    if (p.x < bb.x1 || p.x > bb.x2 || p.y < bb.y1 || p.y > bb.y2) cy.center(n);
    const d = n.data();
    const folded = n.hasClass("collapsed") ? " (folded: Enter opens it)" : "";
    $("#node-detail").textContent = ex().nodeDetail(d) + folded;
  }

  function move(cy, key) {
    const cur = cy.nodes(":selected").not(".hidden")[0];
    if (!cur || key === "Home") return select(cy, root(cy));
    if (key === "ArrowRight") return select(cy, byPosition(cur.outgoers("node").not(".hidden"))[0]);
    if (key === "ArrowLeft") return select(cy, cur.incomers("node").not(".hidden")[0]);
    const parent = cur.incomers("node").not(".hidden")[0];
    const sibs = parent ? byPosition(parent.outgoers("node").not(".hidden")) : byPosition(shown(cy));
    const i = sibs.toArray().findIndex((m) => m.same(cur));
    const j = key === "ArrowDown" ? i + 1 : i - 1;
    if (j >= 0 && j < sibs.length) select(cy, sibs[j]);
  }

  function graphKeys(e) {
    const cy = ex().cy;
    if (!cy) return;
    if (["ArrowRight", "ArrowLeft", "ArrowUp", "ArrowDown", "Home"].includes(e.key)) {
      e.preventDefault();
      move(cy, e.key);
    } else if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      const cur = cy.nodes(":selected")[0];
      if (!cur) return select(cy, root(cy));
      cur.emit("tap"); // the click's behaviour: open one level, show the details
      select(cy, cur);
    } else if (e.key === "Escape") {
      cy.nodes().unselect();
      $("#node-detail").textContent = "";
    }
  }

  // ---- the proof as a nested list --------------------------------------------------------

  function proofList(g) {
    const box = $("#proof-list");
    if (!g) { box.replaceChildren(document.createTextNode("no proof: ask a check or a goal")); return; }
    const byId = new Map(g.nodes.map((n) => [n.data.id, n.data]));
    const kids = new Map();
    const hasParent = new Set();
    for (const e of g.edges) {
      const { source, target } = e.data;
      if (!kids.has(source)) kids.set(source, []);
      kids.get(source).push(target);
      hasParent.add(target);
    }
    const said = new Set();
    const item = (id) => {
      const d = byId.get(id), li = document.createElement("li");
      const kind = { fact: "base fact", derived: "derived", rule: "rule", under: "under (hierarchy)",
                     holds: "holds", failed: "failed", note: "note" }[d.cls] || d.cls || "";
      li.textContent = (kind ? `${kind}: ` : "") + ex().nodeDetail(d).replace(/\n\s*/g, " ");
      if (said.has(id)) { li.append(" (explained above)"); return li; }
      said.add(id);
      const below = kids.get(id) || [];
      if (below.length) {
        const ul = document.createElement("ul");
        for (const k of below) ul.append(item(k));
        li.append(ul);
      }
      return li;
    };
    const top = document.createElement("ul");
    for (const n of g.nodes) if (!hasParent.has(n.data.id)) top.append(item(n.data.id));
    const title = document.createElement("p");
    title.textContent = `${g.holds ? "Proof" : "Why not"}: ${g.goal}`;
    box.replaceChildren(title, top);
  }

  function toggleList(open) {
    const go = $("#proof-list-go"), box = $("#proof-list");
    box.hidden = !open;
    go.setAttribute("aria-expanded", String(open));
    go.textContent = open ? "Hide the list" : "Proof as a list";
    if (open) proofList(ex().answer && ex().answer.graph);
  }

  // ---- wiring ----------------------------------------------------------------------------

  function start() {
    const cyBox = $("#cy");
    cyBox.addEventListener("keydown", graphKeys);
    cyBox.addEventListener("focus", () => {
      const cy = ex().cy;
      if (cy && !cy.nodes(":selected").length && cy.nodes().length) select(cy, root(cy));
    });
    $("#proof-list-go").addEventListener("click", () => toggleList($("#proof-list").hidden));
    for (const sel of ["#proof-list", "#proof-list-go"]) {
      $(sel).addEventListener("keydown", (e) => {
        if (e.key === "Escape" && !$("#proof-list").hidden) {
          toggleList(false);
          $("#proof-list-go").focus();
        }
      });
    }
    // a new answer: the open list follows it
    new MutationObserver(() => {
      if (!$("#proof-list").hidden) proofList(ex().answer && ex().answer.graph);
    }).observe($("#answer"), { childList: true });
    $("#diagnostics").addEventListener("keydown", (e) => {
      if (e.key === " " && e.target.matches("li[tabindex]")) { e.preventDefault(); e.target.click(); }
    });
    document.addEventListener("keydown", (e) => {
      const t = e.target;
      const typing = t.matches && t.matches("input, textarea, select, [contenteditable]");
      if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        $("#ask").focus();
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
