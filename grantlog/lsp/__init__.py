"""The language server for ``.gl`` rule files (``grantlog lsp``): :mod:`.index` (where each
relation and rule is, from the parser's AST), :mod:`.server` (the LSP features, on pygls).
Needs the ``lsp`` extra (``pip install 'grantlog[lsp]'``). The engine never imports it."""
