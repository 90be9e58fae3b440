"""The rules, one node at a time, in their readable form. Pure: no I/O, time comes in as an argument.

A pod's power estimate (powerest.py), what its metadata says (podmeta.py), which nodes it may not
use (filtering.py) and how a node scores for it (scoring.py). The column path (../bulk) computes the
same answers for every candidate at once and is held equal to these. A new scoring or filter rule
goes here first, then into bulk/kernels.py."""
