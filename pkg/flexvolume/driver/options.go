package driver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// PodInfo identifies the pod a "mount" call is for.
type PodInfo struct {
	Name               string
	Namespace          string
	UID                string
	ServiceAccountName string
}

// VolumeOptions is the content of the JSON options argument.
type VolumeOptions struct {
	// FSType is kubernetes.io/fsType.
	FSType string
	// ReadOnly gives kubernetes.io/readwrite "ro", otherwise "rw".
	ReadOnly bool
	// PVOrVolumeName is kubernetes.io/pvOrVolumeName.
	PVOrVolumeName string
	// Pod is set for "mount" only: kubernetes.io/pod.name, pod.namespace,
	// pod.uid and serviceAccount.name.
	Pod *PodInfo
	// FSGroup is set for "mount" only: kubernetes.io/mounterArgs.FsGroup.
	FSGroup *int64
	// Secrets is set for "mount" only. Each key becomes
	// kubernetes.io/secret/<key> with the value base64 encoded.
	Secrets map[string][]byte
	// Options are the volume source's options. They are passed as they are
	// and win over every key above with the same name.
	Options map[string]string
}

// Map returns the options as the flat string map drivers receive.
func (o *VolumeOptions) Map() map[string]string {
	m := make(map[string]string, 3+len(o.Options)+len(o.Secrets)+5)
	m[OptionFSType] = o.FSType
	m[OptionReadWrite] = "rw"
	if o.ReadOnly {
		m[OptionReadWrite] = "ro"
	}
	m[OptionPVOrVolumeName] = o.PVOrVolumeName
	if o.Pod != nil {
		m[OptionPodName] = o.Pod.Name
		m[OptionPodNamespace] = o.Pod.Namespace
		m[OptionPodUID] = o.Pod.UID
		m[OptionServiceAccountName] = o.Pod.ServiceAccountName
	}
	if o.FSGroup != nil {
		m[OptionFSGroup] = strconv.FormatInt(*o.FSGroup, 10)
	}
	for k, v := range o.Secrets {
		m[OptionSecretPrefix+"/"+k] = base64.StdEncoding.EncodeToString(v)
	}
	for k, v := range o.Options {
		m[k] = v
	}
	return m
}

// JSON returns the options argument as passed on the command line.
func (o *VolumeOptions) JSON() (string, error) {
	b, err := json.Marshal(o.Map())
	if err != nil {
		return "", fmt.Errorf("encoding driver options: %w", err)
	}
	return string(b), nil
}
