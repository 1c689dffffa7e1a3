package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LookPathFunc finds an executable as exec.LookPath does: an argument with
// a slash is checked as it is, a bare name is searched in $PATH.
type LookPathFunc func(file string) (string, error)

// shells are the names of shells a blockCleanerCommand may start.
var shells = []string{"sh", "ash", "bash", "dash"}

// ValidatePrograms checks that the program (argv[0]) of every class's
// blockCleanerCommand is an executable that lookPath finds. The master calls
// it with exec.LookPath when it loads the configuration: it runs the image
// of the cleanup Jobs, so a program missing from its filesystem would be
// missing from theirs, and every cleanup of the class would fail.
//
// binaries are executables of the image that are not shell scripts although
// their names end in .sh (the cleaner programs at upstream's /scripts
// paths): a command that hands one to a shell as its script is refused too.
func ValidatePrograms(cfg *Configuration, lookPath LookPathFunc, binaries []string) field.ErrorList {
	var errs field.ErrorList
	for _, name := range cfg.ClassNames() {
		cmd := cfg.StorageClassMap[name].BlockCleanerCommand
		if len(cmd) == 0 {
			continue
		}
		p := field.NewPath(KeyStorageClassMap).Key(name).Child("blockCleanerCommand")
		if _, err := lookPath(cmd[0]); err != nil {
			errs = append(errs, field.Invalid(p.Index(0), cmd[0],
				fmt.Sprintf("the block cleaner of class %s is not an executable of the provisioner image: %v", name, err)))
			continue
		}
		if i := shellScriptIndex(cmd); i > 0 && slices.Contains(binaries, cmd[i]) {
			errs = append(errs, field.Invalid(p.Index(i), cmd[i],
				fmt.Sprintf("is a program, not a shell script: run it without %s, as [%q, ...]", cmd[0], cmd[i])))
		}
	}
	return errs
}

// shellScriptIndex returns the index of the script argument when cmd runs a
// shell on a script file, and 0 otherwise.
func shellScriptIndex(cmd []string) int {
	if !slices.Contains(shells, path.Base(cmd[0])) {
		return 0
	}
	for i := 1; i < len(cmd); i++ {
		switch {
		case cmd[i] == "-c":
			return 0
		case !strings.HasPrefix(cmd[i], "-"):
			return i
		}
	}
	return 0
}
