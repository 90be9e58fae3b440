"""The pure model of a node: its hardware view and power budget (hardware), the digital twin
(twin), workload classes and the downgrade guard (fsm), caps (caps) and the model of speed and power
under a cap (capmodel), and whether a Pod fits a node (fit). Pure: no I/O."""
