{{/* The labels every object carries. */}}
{{- define "sextant.labels" -}}
app.kubernetes.io/name: sextant
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding the token file. */}}
{{- define "sextant.tokenSecret" -}}
{{- if .Values.apiTokens.existingSecret -}}
{{ .Values.apiTokens.existingSecret }}
{{- else -}}
{{ printf "%s-api-tokens" .Release.Name }}
{{- end -}}
{{- end -}}

{{/* The image with its tag. */}}
{{- define "sextant.image" -}}
{{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end -}}
