"""The application: what serves every format (convert pipeline, loading for render and compare, demo, contact
sheets and their operator). Reads the format registry; no format package imports it."""
