{{- define "joulieSim.labels" -}}
app.kubernetes.io/name: joulie-simulator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: joulie
app.kubernetes.io/component: simulator
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "joulieSim.selectorLabels" -}}
app.kubernetes.io/name: joulie-simulator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
