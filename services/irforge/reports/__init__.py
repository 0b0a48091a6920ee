"""`irforge report`: one self-contained HTML page from results, a comparison or a suite.

inputs.py reads what the other commands wrote (results.json, comparison.json, suite.json) into
`System`s and `ReportInput`s; markup.py is the escaping and the table helper every section uses;
plots.py draws the inline SVG charts by hand; sections.py has one function per section; page.py
assembles the document (inline style and a small optional script) and writes it atomically.

The page references nothing outside itself (no CDN, no font, no image file) and renders fully
without its script, which only adds column sorting and marks that it ran.
"""
