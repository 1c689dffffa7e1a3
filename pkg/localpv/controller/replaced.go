package controller

import (
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
)

// Values of Options.ReplacedMachinePolicy: what happens to a bound PV whose
// machine no longer runs under its node's name.
const (
	// ReplacedMachineBlockPods keeps the PV, marks it and refuses new pods
	// that use its claim (the master writes the claim into the admission
	// policy's blockedClaims variable).
	ReplacedMachineBlockPods = "BlockPods"
	// ReplacedMachineWarn keeps the PV and marks it, but blocks no pod.
	ReplacedMachineWarn = "Warn"
)

// ReplacedMachineAdmissionPolicy is the default name of the
// ValidatingAdmissionPolicy that refuses new pods using a claim bound to a
// PV of a replaced machine (Options.AdmissionPolicyName).
const ReplacedMachineAdmissionPolicy = blockedclaims.DefaultPolicyName

// ReplacedMachinePolicies lists the valid policies.
var ReplacedMachinePolicies = []string{ReplacedMachineBlockPods, ReplacedMachineWarn}
