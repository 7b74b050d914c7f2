package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// slurmdPlugins finds gpu_nvml.so where slurmd loads plugins from (issue 33,
// class 5). The Debian layout is the file list of slurm-wlm-basic-plugins
// 22.05.8 (dpkg -L): gres_gpu.so and gpu_generic.so, no gpu_nvml.so.
func TestSlurmdPlugins(t *testing.T) {
	root := t.TempDir()
	mk := func(dir string, names ...string) string {
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(d, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	debian := mk("usr/lib/x86_64-linux-gnu/slurm-wlm", "gres_gpu.so", "gpu_generic.so", "select_cons_tres.so")
	rpm := mk("usr/lib64/slurm", "gres_gpu.so", "gpu_generic.so", "gpu_nvml.so")
	empty := mk("usr/local/lib/slurm") // a leftover directory with no plugins
	absent := filepath.Join(root, "nowhere")
	h := slurmHost{readDir: dirNames}
	for _, c := range []struct {
		name, pluginDir string
		defaults        []string
		want, path, why string
	}{
		{name: "Debian default", defaults: []string{debian, absent, empty}, want: "no", why: "no gpu_nvml.so in " + debian},
		{name: "RPM default", defaults: []string{absent, rpm}, want: "yes", path: filepath.Join(rpm, "gpu_nvml.so")},
		{name: "two defaults disagree", defaults: []string{debian, rpm}, want: "unknown", why: "which one this slurmd loads from is not known"},
		{name: "no default directory", defaults: []string{absent, empty}, want: "unknown", why: "no plugin directory at the defaults"},
		{name: "PluginDir wins over the defaults", pluginDir: debian, defaults: []string{rpm}, want: "no", why: "no gpu_nvml.so in PluginDir=" + debian},
		{name: "PluginDir list, second has it", pluginDir: debian + ":" + rpm, want: "yes", path: filepath.Join(rpm, "gpu_nvml.so")},
		{name: "PluginDir unreadable", pluginDir: absent, want: "unknown", why: "cannot read " + absent},
	} {
		h.pluginDirs = c.defaults
		p := slurmdPlugins(c.pluginDir, h)
		if p.GPUNVML != c.want || p.GPUNVMLPath != c.path || !strings.Contains(p.Why, c.why) {
			t.Errorf("%s: %+v, want %s %q (why containing %q)", c.name, *p, c.want, c.path, c.why)
		}
	}
	if p := slurmdPlugins("", slurmHost{}); p != nil {
		t.Errorf("without a readDir: %+v, want nil (not looked at)", p)
	}
}

// PluginDir= of slurm.conf reaches the collected state.
func TestReadSlurmConfPlugins(t *testing.T) {
	root := t.TempDir()
	plug := filepath.Join(root, "plugins")
	if err := os.MkdirAll(plug, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(root, "slurm.conf")
	if err := os.WriteFile(conf, []byte("PluginDir="+plug+"\nGresTypes=gpu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := readSlurmConf(conf, slurmHost{readFile: os.ReadFile, readDir: dirNames})
	if c.Plugins == nil || c.Plugins.From != "PluginDir" || c.Plugins.GPUNVML != "no" {
		t.Errorf("plugins %+v, want PluginDir, no gpu_nvml.so", c.Plugins)
	}
}
