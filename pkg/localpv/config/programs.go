package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LookPathFunc finds an executable as exec.LookPath does: an argument with
// a slash is checked as it is, a bare name is searched in $PATH.
type LookPathFunc func(file string) (string, error)

// ValidatePrograms checks that the program (argv[0]) of every class's
// blockCleanerCommand is an executable that lookPath finds. The master calls
// it with exec.LookPath when it loads the configuration: it runs the image
// of the cleanup Jobs, so a program missing from its filesystem would be
// missing from theirs, and every cleanup of the class would fail.
func ValidatePrograms(cfg *Configuration, lookPath LookPathFunc) field.ErrorList {
	var errs field.ErrorList
	for _, name := range cfg.ClassNames() {
		cmd := cfg.StorageClassMap[name].BlockCleanerCommand
		if len(cmd) == 0 {
			continue
		}
		if _, err := lookPath(cmd[0]); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(KeyStorageClassMap).Key(name).Child("blockCleanerCommand").Index(0), cmd[0],
				fmt.Sprintf("the block cleaner of class %s is not an executable of the provisioner image: %v", name, err)))
		}
	}
	return errs
}
