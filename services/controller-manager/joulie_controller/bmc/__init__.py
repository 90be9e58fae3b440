"""The BMC shell: the PowerDriver over Redfish (redfishdriver), BMCs from the labelled Secrets."""
