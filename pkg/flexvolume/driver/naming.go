package driver

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DirName is a parsed driver directory name. The directory
// "<vendor>~<driver>" holds the executable "<driver>" and serves the volume
// plugin "<vendor>/<driver>". A name without '~' has no vendor.
type DirName struct {
	Vendor string
	Driver string
}

// String returns the directory name.
func (d DirName) String() string { return JoinDirName(d.Vendor, d.Driver) }

// PluginName returns the name pods use in spec.flexVolume.driver.
func (d DirName) PluginName() string {
	if d.Vendor == "" {
		return d.Driver
	}
	return d.Vendor + "/" + d.Driver
}

// Executable returns the executable's file name inside the directory.
func (d DirName) Executable() string { return d.Driver }

// JoinDirName returns the directory name for a vendor and a driver.
func JoinDirName(vendor, drv string) string {
	if vendor == "" {
		return drv
	}
	return vendor + "~" + drv
}

// ParseDirName parses and validates a driver directory name.
func ParseDirName(dir string) (DirName, error) {
	switch {
	case dir == "":
		return DirName{}, errors.New("invalid driver directory name: empty")
	case strings.HasPrefix(dir, "."):
		return DirName{}, fmt.Errorf("invalid driver directory name %q: names starting with '.' are ignored", dir)
	case strings.Count(dir, "~") > 1:
		return DirName{}, fmt.Errorf("invalid driver directory name %q: want <vendor>~<driver> with a single '~'", dir)
	}
	d := DirName{Driver: dir}
	if i := strings.IndexByte(dir, '~'); i >= 0 {
		d = DirName{Vendor: dir[:i], Driver: dir[i+1:]}
		if d.Vendor == "" {
			return DirName{}, fmt.Errorf("invalid driver directory name %q: empty vendor before '~'", dir)
		}
		if err := ValidateVendor(d.Vendor); err != nil {
			return DirName{}, fmt.Errorf("invalid driver directory name %q: %w", dir, err)
		}
	}
	if err := ValidateDriver(d.Driver); err != nil {
		return DirName{}, fmt.Errorf("invalid driver directory name %q: %w", dir, err)
	}
	if errs := validation.IsQualifiedName(d.PluginName()); len(errs) > 0 {
		return DirName{}, fmt.Errorf("invalid driver directory name %q: plugin name %q: %s",
			dir, d.PluginName(), strings.Join(errs, "; "))
	}
	return d, nil
}

// ValidateVendor checks a vendor name: a lower case DNS subdomain such as
// "example.com", as the prefix of a Kubernetes qualified name must be.
func ValidateVendor(vendor string) error {
	if errs := validation.IsDNS1123Subdomain(vendor); len(errs) > 0 {
		return fmt.Errorf("invalid vendor %q: %s", vendor, strings.Join(errs, "; "))
	}
	return nil
}

// ValidateDriver checks a driver name: the name part of a Kubernetes
// qualified name (at most 63 characters of [A-Za-z0-9-_.], starting and
// ending with an alphanumeric character).
func ValidateDriver(drv string) error {
	if drv == "" {
		return errors.New("invalid driver name: empty")
	}
	if strings.ContainsAny(drv, "/~") {
		return fmt.Errorf("invalid driver name %q: must not contain '/' or '~'", drv)
	}
	if errs := validation.IsQualifiedName(drv); len(errs) > 0 {
		return fmt.Errorf("invalid driver name %q: %s", drv, strings.Join(errs, "; "))
	}
	return nil
}
