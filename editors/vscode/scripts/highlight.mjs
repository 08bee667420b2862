// Renders the shipped models (rules/*.gl) to highlighted HTML with shiki and the extension's
// TextMate grammar: docs/models/<name>.html. Run from the repository root: `make docs-html`.
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from "node:fs";
import { join, dirname, basename } from "node:path";
import { fileURLToPath } from "node:url";
import { createHighlighter } from "shiki";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const grammar = JSON.parse(readFileSync(join(here, "..", "syntaxes", "grantlog.tmLanguage.json"), "utf8"));
const highlighter = await createHighlighter({
  themes: ["github-light"],
  langs: [{ ...grammar, name: "grantlog" }],
});
const out = join(root, "docs", "models");
mkdirSync(out, { recursive: true });
const rules = join(root, "rules");
const files = readdirSync(rules).filter((f) => f.endsWith(".gl") && !f.endsWith("_test.gl")).sort();
for (const f of files) {
  const code = readFileSync(join(rules, f), "utf8");
  const body = highlighter.codeToHtml(code, { lang: "grantlog", theme: "github-light" });
  const page = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">` +
    `<title>rules/${f}</title></head>\n<body>\n<h1>rules/${f}</h1>\n${body}\n</body></html>\n`;
  writeFileSync(join(out, basename(f, ".gl") + ".html"), page);
}
const index = files.map((f) => `<li><a href="${basename(f, ".gl")}.html">rules/${f}</a></li>`).join("\n");
writeFileSync(join(out, "index.html"), `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">` +
  `<title>grantlog models</title></head>\n<body>\n<h1>The shipped models</h1>\n<ul>\n${index}\n</ul>\n</body></html>\n`);
console.log(`highlighted ${files.length} files into docs/models/`);
