package validation

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Reasons a reported volume is rejected. They are metric label values.
const (
	ReasonUnknownClass    = "UnknownClass"
	ReasonInvalidName     = "InvalidName"
	ReasonOutsideHostDir  = "OutsideHostDir"
	ReasonPatternMismatch = "PatternMismatch"
	ReasonWrongKind       = "WrongKind"
	ReasonInvalidCapacity = "InvalidCapacity"
	ReasonDuplicate       = "Duplicate"
	ReasonDiskProperties  = "DiskProperties"
)

// maxNameBytes is NAME_MAX on Linux.
const maxNameBytes = 255

// Volume is a reported volume that passed every check.
type Volume struct {
	Class    string
	Config   config.MountConfig
	Volume   report.Volume
	HostPath string
}

// Rejection is a reported volume, or class, that failed a check.
type Rejection struct {
	Class   string
	Name    string
	Reason  string
	Message string
}

// Result is the outcome of checking one report.
type Result struct {
	// Accepted volumes, in report order.
	Accepted []Volume
	// Rejected volumes and classes.
	Rejected []Rejection
	// Complete lists the classes whose directory was read without error:
	// only for them is a missing volume really missing.
	Complete map[string]bool
}

// Check validates a report from a discovery pod. jobNode is the node the
// master pinned the Job to and podNode the node the pod ran on. A report for
// another node is rejected whole; bad volumes are rejected one by one.
func Check(cfg *config.Configuration, jobNode, podNode string, r *report.Report) (*Result, error) {
	if podNode != jobNode {
		return nil, fmt.Errorf("discovery pod ran on node %q, the Job was pinned to %q", podNode, jobNode)
	}
	if r.Node != jobNode {
		return nil, fmt.Errorf("report is for node %q, the Job was pinned to %q", r.Node, jobNode)
	}
	res := &Result{Complete: map[string]bool{}}
	seenClass := map[string]bool{}
	for _, c := range r.Classes {
		if seenClass[c.Name] {
			return nil, fmt.Errorf("report lists class %q twice", c.Name)
		}
		seenClass[c.Name] = true
		mc, ok := cfg.StorageClassMap[c.Name]
		if !ok {
			res.Rejected = append(res.Rejected, Rejection{Class: c.Name, Reason: ReasonUnknownClass,
				Message: "storage class is not configured"})
			continue
		}
		if c.Error == "" {
			res.Complete[c.Name] = true
		}
		seen := map[string]bool{}
		for _, v := range c.Volumes {
			hostPath, rej := checkVolume(mc, v)
			if rej == nil && seen[v.Name] {
				rej = &Rejection{Reason: ReasonDuplicate, Message: "entry reported twice"}
			}
			if rej != nil {
				rej.Class, rej.Name = c.Name, v.Name
				res.Rejected = append(res.Rejected, *rej)
				continue
			}
			seen[v.Name] = true
			res.Accepted = append(res.Accepted, Volume{Class: c.Name, Config: mc, Volume: v, HostPath: hostPath})
		}
	}
	return res, nil
}

func checkVolume(mc config.MountConfig, v report.Volume) (string, *Rejection) {
	if msg := checkName(v.Name); msg != "" {
		return "", &Rejection{Reason: ReasonInvalidName, Message: msg}
	}
	p, err := HostPath(mc.HostDir, v.Name)
	if err != nil {
		return "", &Rejection{Reason: ReasonOutsideHostDir, Message: err.Error()}
	}
	if !config.MatchName(mc.NamePattern, v.Name) {
		return "", &Rejection{Reason: ReasonPatternMismatch, Message: "entry does not match namePattern " + mc.NamePattern}
	}
	switch {
	case v.Kind == report.KindDirectory && mc.VolumeMode == config.VolumeModeFilesystem:
	case v.Kind == report.KindBlock && mc.AcceptsDevices():
	default:
		return "", &Rejection{Reason: ReasonWrongKind,
			Message: fmt.Sprintf("entry kind %q is not allowed in a %s class", v.Kind, mc.VolumeMode)}
	}
	if v.Capacity <= 0 || v.Capacity > 1<<62 {
		return "", &Rejection{Reason: ReasonInvalidCapacity, Message: fmt.Sprintf("capacity %d is out of range", v.Capacity)}
	}
	if msg := checkDisk(mc, v); msg != "" {
		return "", &Rejection{Reason: ReasonDiskProperties, Message: msg}
	}
	return p, nil
}

// checkDisk returns why a volume's disk properties do not fit its class: a
// class with a disk selector needs them, and they must match it; other
// classes get none.
func checkDisk(mc config.MountConfig, v report.Volume) string {
	switch {
	case mc.DiskSelector == nil && v.Disk != nil:
		return "disk properties reported for a class without a diskSelector"
	case mc.DiskSelector == nil:
		return ""
	case v.Disk == nil:
		return "a class with a diskSelector needs the disk's properties"
	case v.Disk.Size != v.Capacity:
		return fmt.Sprintf("capacity %d differs from the disk's size %d", v.Capacity, v.Disk.Size)
	case !mc.DiskSelector.Matches(v.Disk):
		return "disk properties do not match the class's diskSelector"
	}
	return ""
}

// checkName returns why name is not a single, printable path element.
func checkName(name string) string {
	switch {
	case name == "" || name == "." || name == "..":
		return "entry name must be a file name"
	case len(name) > maxNameBytes:
		return fmt.Sprintf("entry name is longer than %d bytes", maxNameBytes)
	case !utf8.ValidString(name):
		return "entry name is not UTF-8"
	case strings.ContainsRune(name, '/'):
		return "entry name must not contain '/'"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "entry name must not contain control characters"
	}
	return ""
}

// HostPath joins a class's host directory and an entry name, and checks that
// the cleaned result is a direct child of the directory.
func HostPath(hostDir, name string) (string, error) {
	p := filepath.Join(hostDir, name)
	if filepath.Dir(p) != hostDir || !config.Within(p, hostDir) || p == hostDir {
		return "", fmt.Errorf("path %q is not a direct child of %s", p, hostDir)
	}
	return p, nil
}
