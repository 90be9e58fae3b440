"""joulie_api: the Joulie API (joulie.io/v1alpha1) shared by every service.

Types are generated from charts/joulie/crds (see joulie_api.codegen); names, labels and field
managers live in joulie_api.names; the one write path is joulie_api.kube.
"""

from joulie_api.generated.nodehardware import NodeHardware, NodeHardwareSpec, NodeHardwareStatus
from joulie_api.generated.nodetwin import NodeTwin, NodeTwinSpec, NodeTwinStatus
from joulie_api.names import object_name_for_node

__all__ = [
    "NodeHardware",
    "NodeHardwareSpec",
    "NodeHardwareStatus",
    "NodeTwin",
    "NodeTwinSpec",
    "NodeTwinStatus",
    "object_name_for_node",
]
