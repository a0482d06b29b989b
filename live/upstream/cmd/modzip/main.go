// Command modzip writes one module version into a directory laid out as a module proxy
// (GOPROXY=file://DIR), from a source tree: DIR/PATH/@v/VERSION.info, .mod and .zip.
//
// ci/upstream-build.sh uses it for sigs.k8s.io/agent-sandbox when the module proxy does not
// serve the pinned version: the tree is the upstream commit, and the zip is made with
// golang.org/x/mod/zip, the same rules the public proxy applies, so the go.sum of this module
// checks it (h1: hash) exactly as it would check the proxy's copy.
//
//	modzip -module sigs.k8s.io/agent-sandbox -version v0.5.7-0.2026...-2fd412d55eca \
//	    -time 2026-08-22T00:27:14Z -src /path/to/tree -out /path/to/proxy
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	modPath := flag.String("module", "", "module path")
	version := flag.String("version", "", "module version (a semantic or pseudo-version)")
	stamp := flag.String("time", "", "commit time, RFC 3339")
	src := flag.String("src", "", "the module's source tree (its go.mod at the root)")
	out := flag.String("out", "", "the proxy directory to write into")
	flag.Parse()
	if err := run(*modPath, *version, *stamp, *src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "modzip:", err)
		os.Exit(1)
	}
}

func run(modPath, version, stamp, src, out string) error {
	if modPath == "" || version == "" || stamp == "" || src == "" || out == "" {
		return fmt.Errorf("-module, -version, -time, -src and -out are required")
	}
	when, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		return fmt.Errorf("-time: %w", err)
	}
	mv := module.Version{Path: modPath, Version: version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return err
	}
	escPath, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(mv.Version)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, escVersion)

	goMod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{mv.Version, when.UTC()})
	if err != nil {
		return err
	}

	zipTmp := base + ".zip.tmp"
	f, err := os.Create(zipTmp)
	if err != nil {
		return err
	}
	if err := modzip.CreateFromDir(f, mv, src); err != nil {
		f.Close()
		os.Remove(zipTmp)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", goMod, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return err
	}
	return os.Rename(zipTmp, base+".zip")
}
