"""DAVIS 2017 semi-supervised J & F of result folders (``nobg-metrics eval --preset davis``;
docs/boundary_measures.md)."""
