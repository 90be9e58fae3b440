{{/* The app name (app.kubernetes.io/name): nameOverride, default "joulie". */}}
{{- define "joulie.name" -}}
{{- .Values.nameOverride | default "joulie" | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every object name: fullnameOverride, else nameOverride, else "joulie" (so the default
names stay joulie-agent, joulie-controller-manager, ...). The release name is not added: install a
second release into one cluster with its own fullnameOverride (ClusterRoles are cluster-wide). */}}
{{- define "joulie.fullname" -}}
{{- .Values.fullnameOverride | default (include "joulie.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object; "component" is agent, controller-manager or scheduler-extender. */}}
{{- define "joulie.labels" -}}
app.kubernetes.io/name: {{ include "joulie.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/part-of: joulie
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod selector labels of one component (stable across upgrades). */}}
{{- define "joulie.selectorLabels" -}}
app.kubernetes.io/name: {{ include "joulie.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* repository:tag of a component's image values; the tag is required. */}}
{{- define "joulie.image" -}}
{{- $tag := required (printf "%s.image.tag is required (the component's VERSION)" .name) .image.tag -}}
{{ .image.repository }}:{{ $tag }}
{{- end -}}

{{/* env entries from a map of strings (keys sorted), skipping the ones the chart sets itself. */}}
{{- define "joulie.env" -}}
{{- $skip := .skip | default list -}}
{{- range $k, $v := .env }}
{{- if not (has $k $skip) }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "joulie.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The agent pod's GPU tool delivery and power export: runtimeClassName (pod level). */}}
{{- define "joulie.agentRuntimeClass" -}}
{{- with .Values.agent.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- end -}}

{{/* Extra env of the agent container: POWER_EXPORT_*, BMC_*, HARDWARE_CATALOG_EXTRA, then agent.extraEnv (EnvVar objects). */}}
{{- define "joulie.agentExtraEnv" -}}
{{- $a := .Values.agent }}
{{- if $a.powerExport.bmcSecret }}
{{- fail "agent.powerExport.bmcSecret was removed: the agent no longer mounts the BMC Secret that powers nodes (root on one node would be BMC control of the pool). Name a Secret of a read-only BMC account in agent.powerExport.readOnlyBmcSecret (docs/redfish.md \"Host power in the agent\")" }}
{{- end }}
{{- with $a.powerExport.endpoint }}
{{- if $.Values.telemetryTls.enabled }}
{{- include "joulie.telemetryTlsChecked" $ }}
{{- if not (hasPrefix "https://" .) }}
{{- fail (printf "telemetryTls.enabled: agent.powerExport.endpoint=%s must be https:// (Prometheus with a web config requiring client certificates serves only TLS)" .) }}
{{- end }}
- name: OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE
  value: /etc/joulie/otlp-tls/ca.crt
- name: OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE
  value: /etc/joulie/otlp-tls/tls.crt
- name: OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY
  value: /etc/joulie/otlp-tls/tls.key
{{- end }}
- name: POWER_EXPORT_ENDPOINT
  value: {{ . | quote }}
- name: POWER_EXPORT_INTERVAL
  value: {{ $a.powerExport.interval | default "10s" | quote }}
{{- with $a.powerExport.readOnlyBmcSecret }}
{{- /* On a live install (not helm template) the named Secret is looked at: the controller's BMC Secret is refused. */}}
{{- $found := lookup "v1" "Secret" $.Release.Namespace . }}
{{- if and $found (eq (dig "metadata" "labels" "joulie.io/bmc-credentials" "" $found) "true") }}
{{- fail (printf "agent.powerExport.readOnlyBmcSecret=%s: that Secret is labelled joulie.io/bmc-credentials=true, the controller manager's BMC Secret that powers nodes; expected a read-only BMC account's Secret (docs/redfish.md)" .) }}
{{- end }}
{{- end }}
{{- if $a.powerExport.readOnlyBmcSecret }}
- name: BMC_SECRET_DIR
  value: /etc/joulie/bmc
- name: BMC_TIMEOUT
  value: {{ $a.powerExport.bmcTimeout | default "5s" | quote }}
{{- end }}
{{- end }}
{{- if $a.hardwareCatalog.entries }}
- name: HARDWARE_CATALOG_EXTRA
  value: /etc/joulie/hardware-catalog/extra.yaml
{{- end }}
{{- with $a.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Extra volume mounts of the agent container. */}}
{{- define "joulie.agentExtraMounts" -}}
{{- if .Values.agent.hardwareCatalog.entries }}
- name: hardware-catalog
  mountPath: /etc/joulie/hardware-catalog
  readOnly: true
{{- end }}
{{- if and .Values.agent.powerExport.endpoint .Values.agent.powerExport.readOnlyBmcSecret }}
- name: bmc-readonly
  mountPath: /etc/joulie/bmc
  readOnly: true
{{- end }}
{{- if and .Values.agent.powerExport.endpoint .Values.telemetryTls.enabled }}
- name: otlp-tls
  mountPath: /etc/joulie/otlp-tls
  readOnly: true
{{- end }}
{{- with .Values.agent.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Extra volumes of the agent pod. */}}
{{- define "joulie.agentExtraVolumes" -}}
{{- if .Values.agent.hardwareCatalog.entries }}
- name: hardware-catalog
  configMap:
    name: {{ include "joulie.fullname" . }}-hardware-catalog
{{- end }}
{{- if and .Values.agent.powerExport.endpoint .Values.agent.powerExport.readOnlyBmcSecret }}
{{- /* A read-only BMC account's Secret, never the controller's (docs/redfish.md). Optional: a missing
Secret leaves the agent on the labelled sum (one log line), not a pod that never starts */}}
- name: bmc-readonly
  secret:
    secretName: {{ .Values.agent.powerExport.readOnlyBmcSecret }}
    optional: true
{{- end }}
{{- if and .Values.agent.powerExport.endpoint .Values.telemetryTls.enabled }}
{{- /* The agents' push certificate (telemetryTls): not optional, a push without it stores nothing. */}}
- name: otlp-tls
  secret:
    secretName: {{ .Values.telemetryTls.agentSecret }}
    defaultMode: 0440
{{- end }}
{{- with .Values.agent.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod-level securityContext of the controller manager and the extender: Pod Security "restricted"
(non-root uid 65532, the distroless "nonroot" uid, since the images name no USER; seccomp RuntimeDefault). */}}
{{- define "joulie.restrictedPodSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{/* Container-level securityContext to go with it: nothing to escalate to, no capabilities, and a
read-only root filesystem (see joulie.pexRoot for the PEX). */}}
{{- define "joulie.restrictedContainerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end -}}

{{/* A PEX wants a writable PEX_ROOT: on a read-only root filesystem it would unpack its ~190 MB of
dependencies again into a temporary directory at every start (with a warning). So an init container
copies the image's already unpacked PEX_ROOT (/opt/joulie/.pex, ci/images/build.py) into an emptyDir
(under a second, no unpacking), which the service then uses as PEX_ROOT. Args: root (the chart's
context), image (an image values map), name (its values key). */}}
{{- define "joulie.pexRootInit" -}}
initContainers:
  - name: pex-root
    image: {{ include "joulie.image" (dict "name" .name "image" .image) }}
    imagePullPolicy: {{ .image.pullPolicy }}
    command: [cp, -R, /opt/joulie/.pex/., /pex-root/]
    {{- include "joulie.restrictedContainerSecurity" .root | nindent 4 }}
    volumeMounts:
      - name: pex-root
        mountPath: /pex-root
    resources:
      requests: {cpu: 10m, memory: 32Mi}
      limits: {memory: 128Mi}
{{- end -}}

{{/* The writable volumes of a restricted Pod: /tmp and the PEX_ROOT copy. */}}
{{- define "joulie.pexRootVolumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
- name: pex-root
  emptyDir:
    sizeLimit: 512Mi
{{- end -}}

{{- define "joulie.pexRootMounts" -}}
- name: tmp
  mountPath: /tmp
- name: pex-root
  mountPath: /pex-root
{{- end -}}


{{/* telemetryTls on: both Secrets named and distinct, else the render fails saying which. */}}
{{- define "joulie.telemetryTlsChecked" -}}
{{- $t := .Values.telemetryTls }}
{{- if not (and $t.controllerSecret $t.agentSecret) }}
{{- fail "telemetryTls.enabled needs telemetryTls.controllerSecret and telemetryTls.agentSecret (Secrets in the release namespace with ca.crt, tls.crt, tls.key; docs/security.md)" }}
{{- end }}
{{- if eq $t.controllerSecret $t.agentSecret }}
{{- fail (printf "telemetryTls: controllerSecret and agentSecret are both %s: the agents' key is on every node, so the controller manager's certificate needs a Secret of its own" $t.controllerSecret) }}
{{- end }}
{{- end -}}
