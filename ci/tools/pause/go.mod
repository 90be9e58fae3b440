// The sandbox (pause) binary of the kubelet runtime: standard library only, no upstream module.
module joulie.local/ci/tools/pause

go 1.25.0
