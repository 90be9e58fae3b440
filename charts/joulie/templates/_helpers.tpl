{{/* Labels on every object; "component" is agent, controller-manager or scheduler-extender. */}}
{{- define "joulie.labels" -}}
app.kubernetes.io/name: joulie
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
app.kubernetes.io/name: joulie
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
