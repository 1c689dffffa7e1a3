{{/*
mu.checks refuses values the DaemonSet cannot run with, each with the key
and what to do. It renders nothing.
*/}}
{{- define "mu.checks" -}}
{{- $v := .Values -}}
{{- $dir := toString $v.kubeletDir -}}
{{- if not (hasPrefix "/" $dir) -}}
{{- fail (printf "values: kubeletDir %q must be the absolute path of the kubelet's root directory (its --root-dir) on the nodes, such as /var/lib/kubelet" $dir) -}}
{{- end -}}
{{- if eq $dir "/" -}}
{{- fail "values: kubeletDir \"/\": the pods would mount the host's whole file system with Bidirectional propagation; set the kubelet's --root-dir, such as /var/lib/kubelet" -}}
{{- end -}}
{{- if ne (clean $dir) $dir -}}
{{- fail (printf "values: kubeletDir %q is not a clean path, and the mount must be at the path the kubelet uses: write it as %s" $dir (clean $dir)) -}}
{{- end -}}
{{- if not (toString $v.image | trim) -}}
{{- fail "values: image is empty: name the mount-utilities image (build/mount-utilities), such as docker.io/nodeplug/mount-utilities:1" -}}
{{- end -}}
{{- if not (has (toString $v.imagePullPolicy) (list "Always" "IfNotPresent" "Never")) -}}
{{- fail (printf "values: imagePullPolicy %q must be Always, IfNotPresent or Never" (toString $v.imagePullPolicy)) -}}
{{- end -}}
{{- end -}}

{{/*
mu.tolerations: the values' tolerations, and one for the taint of
mount-utilities-upgrade unless a toleration of every taint is among them:
the upgrade refuses a DaemonSet whose pods that taint would evict.
*/}}
{{- define "mu.tolerations" -}}
{{- $all := false -}}
{{- range .Values.tolerations -}}
{{- if and (eq (toString .operator) "Exists") (not .key) (not .effect) (not (hasKey . "tolerationSeconds")) -}}
{{- $all = true -}}
{{- end -}}
{{- end -}}
{{- $tol := .Values.tolerations | default list -}}
{{- if not $all -}}
{{- $tol = append $tol (dict "key" "nodeplug.io/mount-utilities-upgrade" "operator" "Exists" "effect" "NoExecute") -}}
{{- end -}}
{{- toYaml $tol -}}
{{- end -}}

{{/*
mu.checkNamespace fails when the release namespace exists and Pod Security
would refuse the privileged mount pods. lookup finds nothing under helm
template, so only installs and upgrades are checked.
*/}}
{{- define "mu.checkNamespace" -}}
{{- if .Values.checkNamespacePodSecurity -}}
{{- $ns := lookup "v1" "Namespace" "" .Release.Namespace -}}
{{- if $ns -}}
{{- $level := index ($ns.metadata.labels | default dict) "pod-security.kubernetes.io/enforce" | default "" -}}
{{- if and $level (ne $level "privileged") -}}
{{- fail (printf "namespace %s: Pod Security enforces %q, which refuses the privileged mount pods; run kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite and keep the namespace for the mount pods alone (set checkNamespacePodSecurity: false only if another admission setup allows these pods)" .Release.Namespace $level .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
