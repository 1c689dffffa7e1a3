{{/* The chart's name, or nameOverride. */}}
{{- define "lvp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object name: fullnameOverride, or the release
name, followed by the chart's name unless the release name holds it. */}}
{{- define "lvp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "lvp.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "lvp.masterName" -}}{{ include "lvp.fullname" . }}-master{{- end -}}
{{- define "lvp.watcherName" -}}{{ include "lvp.fullname" . }}-watcher{{- end -}}
{{- define "lvp.replacedMachinePolicy" -}}{{ include "lvp.fullname" . }}-replaced-machine-claims{{- end -}}
{{- define "lvp.configName" -}}{{ include "lvp.fullname" . }}-config{{- end -}}

{{- define "lvp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "lvp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: nodeplug
{{- end -}}

{{/* lvp.selector: the labels of the pods of one component (dict "root" $
"component" "master"). */}}
{{- define "lvp.selector" -}}
app.kubernetes.io/name: {{ include "lvp.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "lvp.image" -}}{{ tpl .Values.image . }}{{- end -}}

{{/* lvp.podExtras: what both pods take from the upstream keys. */}}
{{- define "lvp.podExtras" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end -}}

{{/* lvp.commonArgs: flags of both components. */}}
{{- define "lvp.kubeconfigArg" -}}
{{- with .Values.kubeConfigEnv }}
- --kubeconfig={{ . }}
{{- end }}
{{- end -}}

{{/* lvp.cleans: true when a class may hold block devices. */}}
{{- define "lvp.hasDeviceClass" -}}
{{- range .Values.classes -}}
{{- if or (eq (toString .volumeMode) "Block") .fsType -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* lvp.hasDiskSelector: true when a class (the context) has a
diskSelector; {} is one (it selects every disk), null is none. */}}
{{- define "lvp.hasDiskSelector" -}}
{{- if and (hasKey . "diskSelector") (not (kindIs "invalid" .diskSelector)) -}}true{{- end -}}
{{- end -}}

{{/* lvp.hostDir: a class's hostDir; for a class with a diskSelector it
defaults to /dev/disk/by-id, as the master's. */}}
{{- define "lvp.hostDir" -}}
{{- if .hostDir -}}{{ .hostDir }}{{- else if include "lvp.hasDiskSelector" . -}}/dev/disk/by-id{{- end -}}
{{- end -}}

{{/* lvp.inDev: true when a class's hostDir lies in /dev/disk, which the
watcher and the Jobs see through their /dev mount. */}}
{{- define "lvp.inDev" -}}
{{- if hasPrefix "/dev/disk/" (include "lvp.hostDir" .) -}}true{{- end -}}
{{- end -}}

{{/*
lvp.livenessProbe: the watcher's liveness probe. values.yaml holds none, so
that a probe given in values (sig-storage-local-static-provisioner's chart
sets tcpSocket) is not merged with a default handler into a probe the
apiserver refuses; a probe with no handler (exec, httpGet, tcpSocket, grpc)
gets the chart's: GET /healthz on the metrics port, every 30 s unless
periodSeconds is set.
*/}}
{{- define "lvp.livenessProbe" -}}
{{- $p := deepCopy (.Values.livenessProbe | default dict) -}}
{{- if not (or $p.exec $p.httpGet $p.tcpSocket $p.grpc) -}}
{{- $_ := set $p "httpGet" (dict "path" "/healthz" "port" "metrics") -}}
{{- if not (hasKey $p "periodSeconds") }}{{ $_ := set $p "periodSeconds" 30 }}{{ end -}}
{{- end -}}
{{- toYaml $p -}}
{{- end -}}

{{/* lvp.releasesClaims: "true" when a class sets
releaseClaimsOfDeletedNodesAfter, the only use of the master's rights to
delete claims, patch their status and get pods. */}}
{{- define "lvp.releasesClaims" -}}
{{- range .Values.classes }}{{ if .releaseClaimsOfDeletedNodesAfter }}true{{ end }}{{ end -}}
{{- end -}}
