"""What comes in from outside, read into the rules' inputs. Pure: no I/O.

The kube-scheduler extender v1 format (scheduler.py: parse a request, encode a reply; openapi.py:
the schema /docs shows) and the API server's objects (views.py: NodeTwin, NodeHardware and Node
labels as the views the rules read)."""
