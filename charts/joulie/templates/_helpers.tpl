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
{{- with $a.powerExport.endpoint }}
- name: POWER_EXPORT_ENDPOINT
  value: {{ . | quote }}
- name: POWER_EXPORT_INTERVAL
  value: {{ $a.powerExport.interval | default "10s" | quote }}
{{- if $a.powerExport.bmcSecret }}
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
{{- if and .Values.agent.powerExport.endpoint .Values.agent.powerExport.bmcSecret }}
- name: bmc-secret
  mountPath: /etc/joulie/bmc
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
{{- if and .Values.agent.powerExport.endpoint .Values.agent.powerExport.bmcSecret }}
{{- /* optional: a missing Secret leaves the agent on the labelled sum (one log line), not a pod that never starts */}}
- name: bmc-secret
  secret:
    secretName: {{ .Values.agent.powerExport.bmcSecret }}
    optional: true
{{- end }}
{{- with .Values.agent.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}
