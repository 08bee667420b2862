#!/usr/bin/env bash
# `make explorer-assets`: rebuild the explorer's vendored front-end files from the versions
# locked in grantlog/explorer/assets/package-lock.json (npm in a build folder; nothing is
# installed into the repository):
#   grantlog/explorer/static/vendor/shiki-core.min.js   shiki's core + JavaScript regex engine
#                                                       (esbuild, one IIFE: global `shikiCore`)
#   grantlog/explorer/static/vendor/shiki-core.LICENSES the licences of every bundled package
#   grantlog/explorer/static/vendor/grantlog.tmLanguage.json  editors/vscode's grammar, copied
#   tests/vendor/axe.min.js (+ axe-core.LICENSE)        axe-core for the accessibility test
#   grantlog/explorer/assets/vendored.sha256            what the build wrote (checked by
#                                                       tests/test_explorer_assets.py)
# The build is reproducible: the same lock file gives the same bytes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ASSETS="$ROOT/grantlog/explorer/assets"
VENDOR="$ROOT/grantlog/explorer/static/vendor"
TESTS="$ROOT/tests/vendor"
if [ -n "${EXPLORER_ASSETS_BUILD:-}" ]; then
  BUILD=$EXPLORER_ASSETS_BUILD
else
  BUILD=$(mktemp -d)
  trap 'rm -rf "$BUILD"' EXIT
fi
cp "$ASSETS/package.json" "$ASSETS/package-lock.json" "$ASSETS/shiki-entry.js" "$BUILD/"
cd "$BUILD"
npm ci --no-audit --no-fund --loglevel=error
v() { node -p "require('./node_modules/$1/package.json').version"; }
BANNER="/*! grantlog explorer: @shikijs/core $(v @shikijs/core), @shikijs/engine-javascript \
$(v @shikijs/engine-javascript), bundled by esbuild $(v esbuild); licences: shiki-core.LICENSES */"
node_modules/.bin/esbuild shiki-entry.js --bundle --minify --format=iife --global-name=shikiCore \
  --target=es2022 --legal-comments=none --banner:js="$BANNER" --metafile=meta.json \
  --outfile="$VENDOR/shiki-core.min.js" --log-level=warning
# every package the bundle took code from, with its licence text
node -e '
const fs = require("fs"), path = require("path");
const meta = JSON.parse(fs.readFileSync("meta.json", "utf8"));
const pkgs = new Set();
for (const f of Object.keys(meta.inputs)) {
  const m = f.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (m) pkgs.add(m[1]);
}
let out = "Licences of the packages bundled into shiki-core.min.js (from make explorer-assets)\n";
for (const p of [...pkgs].sort()) {
  const dir = path.join("node_modules", p);
  const pj = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const lic = fs.readdirSync(dir).find((n) => /^licen[cs]e/i.test(n));
  out += `\n==== ${p} ${pj.version} (${pj.license})\n\n`;
  out += lic ? fs.readFileSync(path.join(dir, lic), "utf8").trim() + "\n" : "(no licence file)\n";
}
fs.writeFileSync(process.argv[1], out);
' "$VENDOR/shiki-core.LICENSES"
mkdir -p "$TESTS"
cp node_modules/axe-core/axe.min.js "$TESTS/axe.min.js"
cp node_modules/axe-core/LICENSE "$TESTS/axe-core.LICENSE"
cp "$ROOT/editors/vscode/syntaxes/grantlog.tmLanguage.json" "$VENDOR/grantlog.tmLanguage.json"
cd "$ROOT"
sha256sum grantlog/explorer/static/vendor/shiki-core.min.js \
  grantlog/explorer/static/vendor/grantlog.tmLanguage.json tests/vendor/axe.min.js \
  > "$ASSETS/vendored.sha256"
echo "explorer assets rebuilt from $ASSETS/package-lock.json"
