{{/*
lvp.checks refuses the values of the upstream chart that nodeplug cannot
honour, each with the key and what to do. It renders nothing.
*/}}
{{- define "lvp.checks" -}}
{{- $v := .Values -}}
{{- range $key := list "common" "daemonset" -}}
{{- if hasKey $v $key -}}
{{- fail (printf "values: %q is a key of the upstream chart 1.x; its keys are at the top level since upstream's chart 2.0.0 (for example %s.tolerations is tolerations): move them there, then run helm upgrade again" $key $key) -}}
{{- end -}}
{{- end -}}
{{- if hasKey $v "configmap" -}}
{{- fail "values: \"configmap\" is a key of the upstream chart for provisioners before 2.2.0; convert the file with upstream's update-helm-values-pre-v2.2.0 helper, move the keys of common and daemonset to the top level, then run helm upgrade again" -}}
{{- end -}}
{{- if $v.enableWindows -}}
{{- fail "values: enableWindows: nodeplug's provisioner runs on Linux nodes only; set enableWindows: false" -}}
{{- end -}}
{{- if $v.removeNodeNotReadyTaint -}}
{{- fail "values: removeNodeNotReadyTaint: nodeplug never updates Nodes, so it cannot remove a startup taint; drop the taint from the node pool's startup taints, then set removeNodeNotReadyTaint: false" -}}
{{- end -}}
{{- if not $v.serviceAccount.create -}}
{{- fail "values: serviceAccount.create: false: nodeplug needs two ServiceAccounts with different rights (the master writes PVs, the watcher only its node's NodeDiskState) and creates them as <fullname>-master and <fullname>-watcher; set serviceAccount.create: true" -}}
{{- end -}}
{{- if $v.serviceAccount.name -}}
{{- fail (printf "values: serviceAccount.name %q: nodeplug names its two ServiceAccounts <fullname>-master and <fullname>-watcher (set fullnameOverride to choose the prefix); remove serviceAccount.name" $v.serviceAccount.name) -}}
{{- end -}}
{{- if $v.rbac.extraRules -}}
{{- fail "values: rbac.extraRules: nodeplug's watcher may write only its node's NodeDiskState and its master is the only PV writer; grant what your init containers need with your own Role bound to ServiceAccount <fullname>-watcher, and remove rbac.extraRules" -}}
{{- end -}}
{{- if contains "sig-storage/local-volume-provisioner" (toString $v.image) -}}
{{- fail (printf "values: image %q is the upstream provisioner's image, which has no master or watcher; remove image to use the chart's default, or name a build of nodeplug's image (build/local-volume-provisioner)" (toString $v.image)) -}}
{{- end -}}
{{- if $v.hostPID -}}
{{- fail "values: hostPID: nodeplug's watcher needs no host PID namespace and is not given one; set hostPID: false" -}}
{{- end -}}
{{- if $v.securityContext -}}
{{- fail "values: securityContext: nodeplug's watcher runs with a fixed least-privilege securityContext (not privileged; block cleanup Jobs are privileged on their own); remove securityContext" -}}
{{- end -}}
{{- if and (not $v.mountDevVolume) (include "lvp.hasDeviceClass" .) -}}
{{- fail "values: mountDevVolume: false, but a class has volumeMode: Block or an fsType, and the watcher needs the host's /dev to see block devices; set mountDevVolume: true" -}}
{{- end -}}
{{- include "lvp.checkClasses" . -}}
{{- end -}}

{{- define "lvp.checkClasses" -}}
{{- if not .Values.classes -}}
{{- fail "values: classes is empty: list at least one class (name, hostDir)" -}}
{{- end -}}
{{- $seen := dict -}}
{{- $classKeys := list "name" "hostDir" "mountDir" "volumeMode" "accessMode" "fsType" "namePattern" "blockCleanerCommand" "selector" "diskSelector" "storageClass" "allowedTopologies" "releaseClaimsOfDeletedNodesAfter" -}}
{{- range $i, $c := .Values.classes -}}
{{- if not (kindIs "map" $c) -}}
{{- fail (printf "values: classes[%d] is not a map with name and hostDir" $i) -}}
{{- end -}}
{{- if not $c.name -}}
{{- fail (printf "values: classes[%d] has no name" $i) -}}
{{- end -}}
{{- if hasKey $seen $c.name -}}
{{- fail (printf "values: classes[%d]: class %q is listed twice; give each class its own name" $i $c.name) -}}
{{- end -}}
{{- $_ := set $seen $c.name true -}}
{{- range $key := keys $c | sortAlpha -}}
{{- if not (has $key $classKeys) -}}
{{- fail (printf "values: classes[%d] (%s): key %q is not a class key of this chart, which would drop it; the keys are %s: remove it or correct its name" $i $c.name $key (join ", " $classKeys)) -}}
{{- end -}}
{{- end -}}
{{- $hostDir := include "lvp.hostDir" $c -}}
{{- if not (hasPrefix "/" $hostDir) -}}
{{- fail (printf "values: classes[%d] (%s): hostDir %q must be an absolute path on the host" $i $c.name $hostDir) -}}
{{- end -}}
{{- if and (include "lvp.hasDiskSelector" $c) (not (kindIs "map" $c.diskSelector)) -}}
{{- fail (printf "values: classes[%d] (%s): diskSelector must be a map of disk properties, such as {rotational: false, minSize: 100Gi}" $i $c.name) -}}
{{- end -}}
{{- if and (include "lvp.inDev" $c) $c.mountDir (ne (toString $c.mountDir) $hostDir) -}}
{{- fail (printf "values: classes[%d] (%s): mountDir %q must equal hostDir %s, which lies in /dev/disk and is seen through the /dev mount; remove mountDir" $i $c.name (toString $c.mountDir) $hostDir) -}}
{{- end -}}
{{- if and $c.volumeMode (not (has (toString $c.volumeMode) (list "Filesystem" "Block"))) -}}
{{- fail (printf "values: classes[%d] (%s): volumeMode %q must be Filesystem or Block" $i $c.name (toString $c.volumeMode)) -}}
{{- end -}}
{{- if and (or (eq (toString $c.volumeMode) "Block") $c.fsType) (not $c.blockCleanerCommand) -}}
{{- fail (printf "values: classes[%d] (%s): a class with volumeMode: Block or an fsType needs blockCleanerCommand; the upstream provisioner defaulted to /scripts/quick_reset.sh, which leaves data readable on devices without discard support: set blockCleanerCommand, for example [\"/scripts/shred.sh\", \"2\"], or [\"/scripts/quick_reset.sh\"] to keep upstream's behaviour" $i $c.name) -}}
{{- end -}}
{{- if and $c.storageClass (kindIs "map" $c.storageClass) $c.storageClass.reclaimPolicy (not (has (toString $c.storageClass.reclaimPolicy) (list "Delete" "Retain"))) -}}
{{- fail (printf "values: classes[%d] (%s): storageClass.reclaimPolicy %q must be Delete or Retain" $i $c.name (toString $c.storageClass.reclaimPolicy)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
lvp.checkNamespace fails when the release namespace exists and Pod Security
would refuse the privileged cleanup Jobs. lookup finds nothing under helm
template, so only installs and upgrades are checked.
*/}}
{{- define "lvp.checkNamespace" -}}
{{- if .Values.nodeplug.checkNamespacePodSecurity -}}
{{- $ns := lookup "v1" "Namespace" "" .Release.Namespace -}}
{{- if $ns -}}
{{- $level := index ($ns.metadata.labels | default dict) "pod-security.kubernetes.io/enforce" | default "" -}}
{{- if and $level (ne $level "privileged") -}}
{{- fail (printf "namespace %s: Pod Security enforces %q, which refuses the provisioner's pods (hostPath volumes, privileged block cleanup Jobs); run kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite and keep the namespace for the provisioner alone (set nodeplug.checkNamespacePodSecurity: false only if another admission setup allows these pods)" .Release.Namespace $level .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
