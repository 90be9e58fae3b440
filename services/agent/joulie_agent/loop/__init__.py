"""The agent loop: every owned node reconciled with its NodeTwin, each tick."""
