package prober

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// scanResult is what one scan of the plugin directory found.
type scanResult struct {
	drivers  map[string]desiredDriver
	problems map[string]string
	// links: some driver directories are symlinks. Two paths may then
	// share one inotify watch, whose events name only one of them.
	links bool
}

// parsedName caches driver.ParseDirName, which validates with regular
// expressions, across scans.
type parsedName struct {
	dn  driver.DirName
	err error
}

type nameCache map[string]parsedName

func (c nameCache) parse(name string) (driver.DirName, error) {
	if p, ok := c[name]; ok {
		return p.dn, p.err
	}
	if len(c) > 4096 {
		clear(c) // bound the cache against a directory full of junk names
	}
	dn, err := driver.ParseDirName(name)
	c[name] = parsedName{dn: dn, err: err}
	return dn, err
}

// scanDir reads the plugin directory. The watcher watches each driver
// directory before reporting it, so a change made after the read is an
// event, and a driver directory read before its watch is in place gets its
// Create event later.
//
// Entries are followed when they are symlinks: a symlink to a directory is a
// driver directory like any other, at start and later alike, and it is the
// symlink's path that the watcher watches (inotify watches its target).
//
// reuse returns the previous scan's result for a driver directory that had
// no event since; it is not asked about symlinks.
func scanDir(root string, names nameCache, reuse func(dirName string) (desiredDriver, bool)) (scanResult, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return scanResult{}, err
	}
	res := scanResult{
		drivers:  map[string]desiredDriver{},
		problems: map[string]string{},
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || (!e.IsDir() && e.Type()&fs.ModeSymlink == 0) {
			continue // hidden, or a plain file: not a driver
		}
		path := filepath.Join(root, name)
		dn, nameErr := names.parse(name)
		if e.Type()&fs.ModeSymlink != 0 {
			res.links = true
			fi, err := os.Stat(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // dangling
			case err != nil:
				if nameErr == nil {
					res.drivers[dn.PluginName()] = desiredDriver{name: dn.PluginName(), dirName: name, keep: true}
				}
				continue
			case !fi.IsDir():
				continue
			}
		}
		if nameErr != nil {
			res.problems[dirProblemPrefix+name] = nameErr.Error()
			continue
		}
		var prev desiredDriver
		var reused bool
		if e.Type()&fs.ModeSymlink == 0 {
			prev, reused = reuse(name)
		}
		if reused {
			res.drivers[dn.PluginName()] = prev
			continue
		}
		res.drivers[dn.PluginName()] = statDriver(path, name, dn)
	}
	return res, nil
}

// statDriver looks at a driver directory's executable.
func statDriver(dir, dirName string, dn driver.DirName) desiredDriver {
	d := desiredDriver{name: dn.PluginName(), dirName: dirName, execPath: filepath.Join(dir, dn.Executable())}
	fi, err := os.Stat(d.execPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Not installed (yet): the directory alone is not a driver.
	case err != nil:
		d.keep = true
	default:
		d.present = true
		d.fp = fingerprintOf(fi)
	}
	return d
}

// relPath returns path relative to root, and false when it is outside.
func relPath(root, path string) (string, bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// hasDotComponent reports whether any component of a relative path starts
// with '.', which is how atomic installs hide files that are being written.
func hasDotComponent(rel string) bool {
	if rel == "." {
		return false
	}
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		if strings.HasPrefix(c, ".") {
			return true
		}
	}
	return false
}

// firstComponent returns the first component of a relative path.
func firstComponent(rel string) string {
	if i := strings.IndexByte(rel, filepath.Separator); i >= 0 {
		return rel[:i]
	}
	return rel
}

func describeDirError(root string, err error) string {
	return fmt.Sprintf("flexvolume plugin directory %s is unavailable: %v", root, err)
}

// rescanDirs updates prev, the previous scan's result, for the driver
// directories named in dirty only, without reading the plugin directory. It
// is valid when nothing but those directories had events since prev, and it
// keeps a change's system calls independent of the number of installed
// drivers (the maps of prev are still copied). ok
// is false when a full scan is needed: an entry is a symlink (two paths may
// share its watch) or cannot be looked at.
func rescanDirs(root string, prev scanResult, dirty map[string]bool, names nameCache) (res scanResult, ok bool) {
	res = scanResult{drivers: maps.Clone(prev.drivers), problems: maps.Clone(prev.problems)}
	for name := range dirty {
		path := filepath.Join(root, name)
		dn, nameErr := names.parse(name)
		if nameErr == nil {
			delete(res.drivers, dn.PluginName())
		}
		delete(res.problems, dirProblemPrefix+name)
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // removed
		case err != nil || fi.Mode()&fs.ModeSymlink != 0:
			return scanResult{}, false
		case !fi.IsDir() || strings.HasPrefix(name, "."):
			continue
		case nameErr != nil:
			res.problems[dirProblemPrefix+name] = nameErr.Error()
			continue
		}
		res.drivers[dn.PluginName()] = statDriver(path, name, dn)
	}
	return res, true
}
