// The VS Code client of `grantlog lsp`: starts the language server for .gl files over stdio.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("grantlog");
  const command = config.get("server.command", "grantlog");
  const args = config.get("server.args", ["lsp"]);
  const serverOptions = { command, args, transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [{ scheme: "file", language: "grantlog" }],
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.gl") },
  };
  client = new LanguageClient("grantlog", "grantlog", serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
