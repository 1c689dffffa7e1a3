package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/pflag"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
)

// dropInSuffix is the file ending that upstream reads from --config-dir.
const dropInSuffix = ".conf"

// loadConfig builds the effective KubeletConfiguration the way upstream's
// kubelet command does: the --config file replaces the flag-built defaults,
// the --config-dir drop-ins are merge-patched over it in lexical order, and
// then every flag given on the command line wins again.
//
// It stands in for the unexported loadConfigFile, mergeKubeletConfigurations
// and kubeletConfigFlagPrecedence of k8s.io/kubernetes/cmd/kubelet/app.
func loadConfig(ctx context.Context, flags *options.KubeletFlags, kc *kubeletconfig.KubeletConfiguration,
	parsed *pflag.FlagSet, args []string) (*kubeletconfig.KubeletConfiguration, []string, error) {
	if flags.KubeletConfigFile == "" && flags.KubeletDropinConfigDirectory == "" {
		return kc, nil, nil
	}
	var err error
	if flags.KubeletConfigFile != "" {
		if kc, err = readConfigFile(ctx, flags.KubeletConfigFile); err != nil {
			return nil, nil, err
		}
	}
	var skipped []string
	if flags.KubeletDropinConfigDirectory != "" {
		if skipped, err = applyDropIns(kc, flags.KubeletDropinConfigDirectory); err != nil {
			return nil, nil, err
		}
	}
	if err := reapplyFlags(kc, parsed, args); err != nil {
		return nil, nil, fmt.Errorf("re-applying command-line flags over the config file: %w", err)
	}
	return kc, skipped, nil
}

// readConfigFile loads one KubeletConfiguration file with upstream's loader.
func readConfigFile(ctx context.Context, name string) (*kubeletconfig.KubeletConfiguration, error) {
	path, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("kubelet config file %q: %w", name, err)
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, path)
	if err != nil {
		return nil, fmt.Errorf("kubelet config file %q: %w", name, err)
	}
	kc, err := loader.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubelet config file %q: %w", name, err)
	}
	// evictionHard has no API default because its keys differ per OS; the
	// kubelet fills it (or merges it, when asked to) after loading.
	switch {
	case kc.EvictionHard == nil:
		kc.EvictionHard = eviction.DefaultEvictionHard
	case kc.MergeDefaultEvictionSettings:
		for signal, threshold := range eviction.DefaultEvictionHard {
			if _, set := kc.EvictionHard[signal]; !set {
				kc.EvictionHard[signal] = threshold
			}
		}
	}
	return kc, nil
}

// applyDropIns merge-patches every *.conf file below dir, in lexical path
// order, over kc. Other files are returned as skipped.
func applyDropIns(kc *kubeletconfig.KubeletConfiguration, dir string) ([]string, error) {
	files, skipped, err := listDropIns(dir)
	if err != nil {
		return nil, err
	}
	external := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := kubeletconfigscheme.Convert_config_KubeletConfiguration_To_v1beta1_KubeletConfiguration(kc, external, nil); err != nil {
		return nil, fmt.Errorf("converting kubelet config for drop-ins: %w", err)
	}
	doc, err := json.Marshal(external)
	if err != nil {
		return nil, fmt.Errorf("encoding kubelet config for drop-ins: %w", err)
	}
	want := kubeletconfigv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration")
	for _, file := range files {
		loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, file)
		if err != nil {
			return nil, fmt.Errorf("kubelet drop-in %q: %w", file, err)
		}
		patch, gvk, err := loader.LoadIntoJSON()
		if err != nil {
			return nil, fmt.Errorf("kubelet drop-in %q: %w", file, err)
		}
		if gvk == nil || *gvk != want {
			return nil, fmt.Errorf("kubelet drop-in %q: apiVersion/kind must be %s", file, want)
		}
		if doc, err = jsonpatch.MergePatch(doc, patch); err != nil {
			return nil, fmt.Errorf("kubelet drop-in %q: %w", file, err)
		}
	}
	merged := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := json.Unmarshal(doc, merged); err != nil {
		return nil, fmt.Errorf("decoding merged kubelet config: %w", err)
	}
	kubeletconfigscheme.SetDefaults_KubeletConfiguration(merged)
	if err := kubeletconfigscheme.Convert_v1beta1_KubeletConfiguration_To_config_KubeletConfiguration(merged, kc, nil); err != nil {
		return nil, fmt.Errorf("converting merged kubelet config: %w", err)
	}
	return skipped, nil
}

// listDropIns returns the drop-in files below dir in lexical order.
func listDropIns(dir string) (files, skipped []string, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
		case filepath.Ext(path) == dropInSuffix:
			files = append(files, path)
		default:
			skipped = append(skipped, path)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading kubelet drop-in dir %q: %w", dir, err)
	}
	sort.Strings(files)
	return files, skipped, nil
}

// reapplyFlags parses args again so that the KubeletConfiguration flags
// the user gave override the file. Every other flag is registered as a
// no-op, because some flag values accumulate when parsed twice; a no-op
// keeps its flag's optional value, so that a boolean flag given without
// one (--experimental-flexvolume-discovery) neither swallows the argument
// after it nor fails as the last one. Feature gates set only in the file
// are kept.
func reapplyFlags(kc *kubeletconfig.KubeletConfiguration, parsed *pflag.FlagSet, args []string) error {
	fileGates := kc.FeatureGates
	fs := pflag.NewFlagSet("precedence", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.SetOutput(io.Discard)
	options.AddKubeletConfigFlags(fs, kc)
	parsed.VisitAll(func(f *pflag.Flag) {
		if fs.Lookup(f.Name) == nil {
			fs.VarP(cliflag.NoOp{}, f.Name, f.Shorthand, f.Usage)
			fs.Lookup(f.Name).NoOptDefVal = f.NoOptDefVal
		}
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	for gate, on := range fileGates {
		if _, set := kc.FeatureGates[gate]; !set {
			kc.FeatureGates[gate] = on
		}
	}
	return nil
}
