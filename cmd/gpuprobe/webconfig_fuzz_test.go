package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadWebConfig reads an arbitrary --web.config.file (with a cert and
// key beside it): never a panic, the config's bytes come back as they
// are, one file read for each TLS path the YAML names, and an error names
// the flag and the file.
func FuzzReadWebConfig(f *testing.F) {
	for _, s := range []string{
		"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n",
		"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_ca_file: cert.pem\n  client_auth_type: RequireAndVerifyClientCert\nbasic_auth_users:\n  a: $2y$10$x\n",
		"tls_server_config:\n  cert_file: missing.pem\n",
		"tls_server_config:\n  cert_file: [a, b]\n  key_file: \"\"\n",
		"tls_server_config: &a\n  cert_file: cert.pem\nx: *a\n",
		"http_server_config:\n  http2: false\n", "", "---\n", "[", "a: b: c", "\t",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	for _, n := range []string{"cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("-----BEGIN X-----\n"), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	path := filepath.Join(dir, "web.yml")
	f.Fuzz(func(t *testing.T, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		raw, doc, files, err := readWebConfig(context.Background(), path)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--web.config.file "+path) {
				t.Fatalf("error does not name the flag and file: %v", err)
			}
			return
		}
		if string(raw) != s {
			t.Fatalf("config bytes changed: %q to %q", s, raw)
		}
		if doc == nil {
			if files != nil {
				t.Fatalf("files read for a config with no YAML tree")
			}
			return
		}
		want := 0
		for _, v := range webTLSValues(doc) {
			if v.node.Value != "" {
				want++
			}
		}
		if len(files) != want {
			t.Fatalf("%d files read for %d TLS paths", len(files), want)
		}
	})
}
