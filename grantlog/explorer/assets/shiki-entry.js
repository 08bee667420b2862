// The explorer's TextMate tokenizer: shiki's core with its JavaScript regex engine (no wasm, no
// network), bundled by esbuild into static/vendor/shiki-core.min.js as the global `shikiCore`.
// The page loads editors/vscode/syntaxes/grantlog.tmLanguage.json (the grammar VS Code uses)
// and tokenizes line by line with the grammar's rule stack (static/highlight.js).
export { createHighlighterCore } from "@shikijs/core";
export { createJavaScriptRegexEngine } from "@shikijs/engine-javascript";
