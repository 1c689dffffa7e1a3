package installer

import (
	"fmt"
	"os"
	"strings"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// DriverSpec is one driver to install: its directory name under the plugin
// directory and the file to copy there.
type DriverSpec struct {
	Name   driver.DirName
	Source string
}

// ParseDriverSpec parses "<vendor>/<driver>=<file>" (or
// "<vendor>~<driver>=<file>", or "<driver>=<file>" without a vendor) and
// checks that the names are valid driver names and that file is a regular
// file.
func ParseDriverSpec(s string) (DriverSpec, error) {
	name, src, ok := strings.Cut(s, "=")
	if !ok || src == "" {
		return DriverSpec{}, fmt.Errorf("want <vendor>/<driver>=<file>, got %q", s)
	}
	vendor, drv := "", name
	if i := strings.IndexAny(name, "/~"); i >= 0 {
		vendor, drv = name[:i], name[i+1:]
		if err := driver.ValidateVendor(vendor); err != nil {
			return DriverSpec{}, err
		}
	}
	if err := driver.ValidateDriver(drv); err != nil {
		return DriverSpec{}, err
	}
	dn, err := driver.ParseDirName(driver.JoinDirName(vendor, drv))
	if err != nil {
		return DriverSpec{}, err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return DriverSpec{}, fmt.Errorf("driver file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return DriverSpec{}, fmt.Errorf("driver file %s is not a regular file", src)
	}
	return DriverSpec{Name: dn, Source: src}, nil
}
