"""joulie-controller-manager: twin controller (measured power from Prometheus into NodeTwin.status), policy controller (performance/eco plans into NodeTwin.spec), facility poller."""
