{{/* Names, labels and the values the templates share. */}}

{{- define "leveret.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: the release name, prefixed to the chart's name unless it already contains it.
Kept to 52 characters so that "<fullname>-headless" and the pods' names stay valid.
*/}}
{{- define "leveret.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "leveret.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "leveret.selectorLabels" -}}
app.kubernetes.io/name: {{ include "leveret.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "leveret.labels" -}}
helm.sh/chart: {{ include "leveret.chart" . }}
{{ include "leveret.selectorLabels" . }}
app.kubernetes.io/version: {{ (.Values.image.tag | default .Chart.AppVersion) | toString | trunc 63 | quote }}
app.kubernetes.io/component: broker
app.kubernetes.io/part-of: leveret
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The headless Service: stable DNS names for the pods, ready or not. */}}
{{- define "leveret.headlessName" -}}
{{- printf "%s-headless" (include "leveret.fullname" .) }}
{{- end }}

{{/* <headless>.<namespace>.svc.<clusterDomain>: the domain every pod's host name is in. */}}
{{- define "leveret.peerDomain" -}}
{{- printf "%s.%s.svc.%s" (include "leveret.headlessName" .) .Release.Namespace .Values.clusterDomain }}
{{- end }}

{{/* Pod 0's cluster address: every pod names it as its seed; pod 0 skips itself. */}}
{{- define "leveret.joinSeed" -}}
{{- printf "%s-0.%s:25672" (include "leveret.fullname" .) (include "leveret.peerDomain" .) }}
{{- end }}

{{- define "leveret.secretName" -}}
{{- .Values.auth.existingSecret | default (include "leveret.fullname" .) }}
{{- end }}

{{- define "leveret.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "leveret.fullname" .) }}
{{- else }}
{{- .Values.serviceAccount.name | default "default" }}
{{- end }}
{{- end }}

{{- define "leveret.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/*
One TOML value: strings, numbers, booleans and arrays of them are written as JSON, whose
syntax TOML shares for these; a table has no place among the node's flat keys.
*/}}
{{- define "leveret.tomlValue" -}}
{{- if kindIs "map" . }}
{{- fail "config: values are strings, numbers, booleans or arrays of them; put tables in extraConfig" }}
{{- end }}
{{- toJson . }}
{{- end }}

{{/*
A Kubernetes memory quantity ("1Gi", "512M", "2147483648") in bytes, as a float.
*/}}
{{- define "leveret.quantityBytes" -}}
{{- $quantity := toString . }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $quantity }}
{{- $unit := trimPrefix $number $quantity }}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 }}
{{- if or (not $number) (not (hasKey $units $unit)) }}
{{- fail (printf "resources.limits.memory: cannot read %q as a quantity (use Ki, Mi, Gi, Ti, k, M, G or T)" $quantity) }}
{{- end }}
{{- mulf (float64 $number) (get $units $unit) }}
{{- end }}

{{/* The AMQP and management ports (and AMQPS with TLS), for Services and the NetworkPolicy. */}}
{{- define "leveret.clientPorts" -}}
- name: amqp
  port: 5672
  targetPort: amqp
  protocol: TCP
{{- if .Values.tls.enabled }}
- name: amqps
  port: 5671
  targetPort: amqps
  protocol: TCP
{{- end }}
- name: management
  port: 15672
  targetPort: management
  protocol: TCP
{{- end }}

{{/*
The definitions document the nodes load at start, as JSON ("{}" when there is nothing to load):
`definitions`, plus a federation-upstream parameter per `federation.upstreams` entry and a
policy per `federation.policies` entry.
*/}}
{{- define "leveret.definitions" -}}
{{- $document := deepCopy (.Values.definitions | default dict) }}
{{- $parameters := $document.parameters | default list }}
{{- range $name := keys (.Values.federation.upstreams | default dict) | sortAlpha }}
{{- $upstream := get $.Values.federation.upstreams $name }}
{{- $vhost := $upstream.vhost | default "/" }}
{{- $parameters = append $parameters (dict "component" "federation-upstream" "vhost" $vhost "name" $name "value" (omit $upstream "vhost")) }}
{{- end }}
{{- if $parameters }}{{ $_ := set $document "parameters" $parameters }}{{ end }}
{{- $policies := $document.policies | default list }}
{{- range .Values.federation.policies | default list }}
{{- $definition := dict }}
{{- if .upstreamSet }}{{ $_ := set $definition "federation-upstream-set" .upstreamSet }}{{ else }}{{ $_ := set $definition "federation-upstream" .upstream }}{{ end }}
{{- $policies = append $policies (dict "name" .name "vhost" (.vhost | default "/") "pattern" .pattern "apply-to" "queues" "priority" (.priority | default 0) "definition" $definition) }}
{{- end }}
{{- if $policies }}{{ $_ := set $document "policies" $policies }}{{ end }}
{{- $document | toJson }}
{{- end }}
