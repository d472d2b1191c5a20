{{- define "driftpreview.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "driftpreview.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "driftpreview.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "driftpreview.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "driftpreview.selectorLabels" -}}
app.kubernetes.io/name: {{ include "driftpreview.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "driftpreview.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "driftpreview.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "driftpreview.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "driftpreview.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "driftpreview.validate" -}}
{{- if and (eq .Values.queue.driver "sqlite") (gt (int .Values.replicaCount) 1) -}}
{{- fail "queue.driver sqlite supports replicaCount 1 only; use queue.driver postgres for more replicas" -}}
{{- end -}}
{{- if not (has .Values.queue.driver (list "sqlite" "postgres")) -}}
{{- fail (printf "queue.driver %q is not sqlite or postgres" .Values.queue.driver) -}}
{{- end -}}
{{- if and (eq .Values.queue.driver "postgres") (not .Values.queue.postgres.existingSecret) -}}
{{- fail "queue.driver postgres needs queue.postgres.existingSecret (a Secret holding the DSN)" -}}
{{- end -}}
{{- if and .Values.github.enabled (not .Values.github.existingSecret) -}}
{{- fail "github.enabled needs github.existingSecret (the App private key and webhook secret)" -}}
{{- end -}}
{{- if and .Values.gitlab.enabled (not .Values.gitlab.existingSecret) -}}
{{- fail "gitlab.enabled needs gitlab.existingSecret (the access token and webhook secret)" -}}
{{- end -}}
{{- end -}}
