"""The energy benchmark: one trace under policies A-D on an accelerated clock (``python -m joulie_bench``)."""
