"""``nobg-metrics eval``: folders of predicted maps against gt folders, the way benchmark tables are made
(docs/cli.md)."""
