"""The node state the request path reads: the store (store.py) and the API-server watches that keep
it current (watch.py). A shell: threads, locks and the Kubernetes client."""
