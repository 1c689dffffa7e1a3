package installer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Installed is a driver this installer wrote.
type Installed struct {
	Spec DriverSpec
	// Dir is <plugin-dir>/<vendor>~<driver>; Path the executable in it.
	Dir, Path string
	// file identifies the inode written, to recognise it at removal.
	file os.FileInfo
}

// Install installs spec into pluginDir atomically; the prober never sees a
// partial file:
//
//   - a new driver directory is assembled as ".<vendor>~<driver>.<random>"
//     and renamed into place, so the driver appears with one event;
//   - an existing one gets ".<driver>.<random>", renamed over the old
//     executable (a running call keeps the old inode).
//
// Every file is written, fsynced and chmod'ed before the rename; the
// directory is fsynced after it.
func Install(pluginDir string, spec DriverSpec, mode os.FileMode) (*Installed, error) {
	dirName, exe := spec.Name.String(), spec.Name.Executable()
	in := &Installed{Spec: spec, Dir: filepath.Join(pluginDir, dirName)}
	in.Path = filepath.Join(in.Dir, exe)
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating plugin directory: %w", err)
	}
	_, err := os.Stat(in.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = installNewDir(pluginDir, in, exe, mode)
	case err == nil:
		err = replaceFile(in, exe, mode)
	}
	if err != nil {
		return nil, fmt.Errorf("installing %s: %w", spec.Name.PluginName(), err)
	}
	if in.file, err = os.Stat(in.Path); err != nil {
		return nil, err
	}
	return in, nil
}

func installNewDir(pluginDir string, in *Installed, exe string, mode os.FileMode) error {
	stage := filepath.Join(pluginDir, "."+filepath.Base(in.Dir)+"."+randomSuffix())
	if err := os.Mkdir(stage, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(stage) // a no-op after a successful rename
	if err := writeFile(filepath.Join(stage, exe), in.Spec.Source, mode); err != nil {
		return err
	}
	if err := syncDir(stage); err != nil {
		return err
	}
	err := os.Rename(stage, in.Dir)
	if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
		return replaceFile(in, exe, mode) // created meanwhile
	}
	if err != nil {
		return err
	}
	return syncDir(pluginDir)
}

func replaceFile(in *Installed, exe string, mode os.FileMode) error {
	tmp := filepath.Join(in.Dir, "."+exe+"."+randomSuffix())
	if err := writeFile(tmp, in.Spec.Source, mode); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, in.Path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(in.Dir)
}

// writeFile copies src to a new file at path, fsyncs it and sets its mode.
func writeFile(path, src string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if err == nil {
		err = out.Chmod(mode)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Remove removes the installed executable if it is still the file this
// installer wrote, then the driver directory if it is empty. It reports
// whether it removed the executable.
func (in *Installed) Remove() (bool, error) {
	fi, err := os.Stat(in.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !os.SameFile(fi, in.file) {
		return false, nil // replaced by another installer: not ours any more
	}
	if err := os.Remove(in.Path); err != nil {
		return false, err
	}
	if err := os.Remove(in.Dir); err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		return true, err
	}
	return true, nil
}

// Check reports whether the driver is in place: an executable regular file
// at Path. A newer installer's file counts too (a surge rollout replaces
// it); a removed, emptied or non-executable one does not.
func (in *Installed) Check() error {
	fi, err := os.Stat(in.Path)
	if err != nil {
		return fmt.Errorf("driver %s: %w", in.Spec.Name.PluginName(), err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("driver %s: %s is not a regular file", in.Spec.Name.PluginName(), in.Path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("driver %s: %s is not executable", in.Spec.Name.PluginName(), in.Path)
	case fi.Size() == 0:
		return fmt.Errorf("driver %s: %s is empty", in.Spec.Name.PluginName(), in.Path)
	}
	return nil
}
