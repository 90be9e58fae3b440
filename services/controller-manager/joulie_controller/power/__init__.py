"""The power policy (powerstate: idle_suspend_v1, which idle nodes to suspend and which to resume)
and the PowerDriver protocol a BMC client implements (powerdriver). Pure: bmc/ holds the Redfish client."""
