"""One reconcile tick over an in-memory snapshot (tick), what it reads, keeps and returns
(snapshot), and the NodeTwin spec and status it owns with their write rules (nodetwin). Pure."""
