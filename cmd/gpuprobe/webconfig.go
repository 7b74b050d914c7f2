package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
)

// webConfigReadLimit bounds the time the web config and the TLS files it
// names may take to read (they are a few KiB); SIGTERM ends the wait too.
// A variable for tests.
var webConfigReadLimit = 10 * time.Second

// The exporter-toolkit (v0.20.0, web/tls_config.go) reads the web config
// with a plain os.ReadFile at start-up, again on every request (basic auth,
// handler.go) and on every TLS handshake (GetConfigForClient -> getConfig,
// then GetCertificate and the client CA pool read cert_file, key_file and
// client_ca_file again). A plain read blocks forever on a FIFO (ignoring
// SIGTERM) and reads /dev/zero until the process runs out of memory, so
// whoever can replace those paths after start-up could hang every new
// connection or kill the daemon (issue 32).
//
// So the toolkit never sees the operator's paths: at start-up gpuprobe reads
// the config and the files it names bounded (readlimit.Regular: regular
// files only, size and time capped), writes private copies into a directory
// of its own (safefile.PrivateDir, mode 0700, under $RUNTIME_DIRECTORY or
// the temp directory), with the config rewritten so that cert_file,
// key_file and client_ca_file name the copies, and hands the toolkit the
// copy's path. The directory is removed at shutdown.
//
// The trade-off: a renewed certificate, key, CA or basic-auth password is
// taken on SIGHUP (or a restart), not on the next handshake. A SIGHUP whose
// read fails (a FIFO, an oversized file) keeps the running snapshot and
// logs why.

// webSnapshotConfig is the copy's name in the snapshot directory.
const webSnapshotConfig = "web-config.yml"

// webSnapshot is the private copy of --web.config.file and its TLS files.
type webSnapshot struct {
	src string // --web.config.file as given
	dir *safefile.Dir

	mu   sync.Mutex
	gen  int
	prev []string // the previous generation's TLS copies
	cur  []string // this generation's
}

// snapshotDirBase is where the snapshot directory goes: systemd's
// RuntimeDirectory= when the unit sets one (the first, when it lists
// several), else the temp directory.
func snapshotDirBase(getenv func(string) string) string {
	if rd := getenv("RUNTIME_DIRECTORY"); rd != "" {
		return strings.Split(rd, ":")[0]
	}
	return os.TempDir()
}

// newWebSnapshot reads path bounded and writes the first snapshot under
// base. It returns nil for no web config.
func newWebSnapshot(ctx context.Context, path, base string) (*webSnapshot, error) {
	if path == "" {
		return nil, nil
	}
	// Read first: a config that cannot be read leaves no directory behind.
	raw, cfg, files, err := readWebConfig(ctx, path)
	if err != nil {
		return nil, err
	}
	dir, err := safefile.PrivateDir(base, "gpuprobe-web-")
	if err != nil {
		return nil, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	s := &webSnapshot{src: path, dir: dir}
	if err := s.write(raw, cfg, files); err != nil {
		dir.RemoveAll()
		return nil, err
	}
	return s, nil
}

// Path is the snapshot config's path, for the toolkit.
func (s *webSnapshot) Path() string { return filepath.Join(s.dir.Path(), webSnapshotConfig) }

// Dir is the snapshot directory's path.
func (s *webSnapshot) Dir() string { return s.dir.Path() }

// Reload reads the operator's files again (SIGHUP) and swaps the snapshot
// in: the config copy is replaced atomically, and the previous generation's
// TLS copies are kept until the next reload, so that a handshake that read
// the old config a moment before still finds the files it names.
func (s *webSnapshot) Reload(ctx context.Context) error {
	raw, cfg, files, err := readWebConfig(ctx, s.src)
	if err != nil {
		return err
	}
	return s.write(raw, cfg, files)
}

// Remove deletes the snapshot directory (at shutdown).
func (s *webSnapshot) Remove() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir.RemoveAll()
}

// webTLSFile is one file the web config names, read.
type webTLSFile struct {
	key  string // cert_file, key_file, client_ca_file
	data []byte
}

// readWebConfig reads the web config and the TLS files it names, each a
// regular file within readlimit.Config bytes and webConfigReadLimit
// altogether, and returns the config's bytes, its YAML tree and those
// files. A config that is not YAML has no tree: its bytes are copied as
// they are, for the toolkit to refuse with its own message.
func readWebConfig(ctx context.Context, path string) ([]byte, *yaml.Node, []webTLSFile, error) {
	ctx, cancel := context.WithTimeout(ctx, webConfigReadLimit)
	defer cancel()
	data, err := readlimit.Regular(ctx, "--web.config.file "+path, path, readlimit.Config)
	if err != nil {
		return nil, nil, nil, err
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return data, nil, nil, nil
	}
	var files []webTLSFile
	for _, v := range webTLSValues(&doc) {
		p := v.node.Value
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			// As the toolkit resolves it: beside the config file.
			p = filepath.Join(filepath.Dir(path), p)
		}
		b, err := readlimit.Regular(ctx, "--web.config.file "+path+": "+v.key+" "+p, p, readlimit.Config)
		if err != nil {
			return nil, nil, nil, err
		}
		files = append(files, webTLSFile{v.key, b})
	}
	return data, &doc, files, nil
}

type webTLSValue struct {
	key  string
	node *yaml.Node
}

// webTLSValues finds the scalar values of tls_server_config's file keys,
// in the order cert_file, key_file, client_ca_file as they appear.
func webTLSValues(doc *yaml.Node) []webTLSValue {
	var out []webTLSValue
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "tls_server_config" || top.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		tls := top.Content[i+1]
		for j := 0; j+1 < len(tls.Content); j += 2 {
			switch k := tls.Content[j].Value; k {
			case "cert_file", "key_file", "client_ca_file":
				if v := tls.Content[j+1]; v.Kind == yaml.ScalarNode {
					out = append(out, webTLSValue{k, v})
				}
			}
		}
	}
	return out
}

// write puts one generation into the directory: the TLS copies under new
// names, then the config copy naming them, replaced atomically.
func (s *webSnapshot) write(raw []byte, doc *yaml.Node, files []webTLSFile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	out := raw
	var written []string
	if doc != nil {
		vals := webTLSValues(doc)
		i := 0
		for _, v := range vals {
			if v.node.Value == "" {
				continue
			}
			name := fmt.Sprintf("%d-%s", s.gen, v.key)
			if err := s.dir.WriteFile(name, files[i].data, 0o600); err != nil {
				s.removeAll(written)
				return fmt.Errorf("--web.config.file %s: snapshot: %w", s.src, err)
			}
			written = append(written, name)
			v.node.Value = filepath.Join(s.dir.Path(), name)
			v.node.Style = yaml.DoubleQuotedStyle
			i++
		}
		var err error
		if out, err = yaml.Marshal(doc); err != nil {
			s.removeAll(written)
			return fmt.Errorf("--web.config.file %s: snapshot: %w", s.src, err)
		}
	}
	if err := s.dir.Replace(webSnapshotConfig, out, 0o600); err != nil {
		s.removeAll(written)
		return fmt.Errorf("--web.config.file %s: snapshot: %w", s.src, err)
	}
	s.removeAll(s.prev)
	s.prev, s.cur = s.cur, written
	return nil
}

func (s *webSnapshot) removeAll(names []string) {
	for _, n := range names {
		s.dir.Remove(n)
	}
}
