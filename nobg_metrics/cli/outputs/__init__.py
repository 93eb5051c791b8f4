"""What a run writes: results.json and the tables (Markdown, LaTeX, XLSX, CSV), the curves and their data, the
statistics and the report page (docs/tables.md, docs/statistics.md)."""
