{{/* The chart's name, cut to the 63 characters a label allows. */}}
{{- define "waitroom.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: the release, with the chart's name unless it has it. */}}
{{- define "waitroom.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "waitroom.selectorLabels" -}}
app.kubernetes.io/name: {{ include "waitroom.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "waitroom.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "waitroom.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "waitroom.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "waitroom.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret loaded as WAITROOM_* variables. */}}
{{- define "waitroom.secretName" -}}
{{- default (include "waitroom.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* Flag name to its environment variable: max-conns -> WAITROOM_MAX_CONNS. */}}
{{- define "waitroom.envName" -}}
{{- printf "WAITROOM_%s" (. | upper | replace "-" "_") }}
{{- end }}
