package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RequireEnv is the environment variable that turns a missing PostgreSQL
// into a test failure: when it is set (to anything), Start and
// Shared.Get fail the test instead of skipping it. CI sets it.
const RequireEnv = "SLUICE_REQUIRE_POSTGRES"

// ErrNotInstalled is what the errors of StartMain wrap when PostgreSQL
// cannot run on this machine: no initdb and postgres binaries, or, for a
// test binary running as root, no "postgres" OS user to run them as.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL is not installed")

// debianRoot is where Debian's postgresql package puts one directory per
// major version, each with a bin directory holding initdb and postgres.
var debianRoot = "/usr/lib/postgresql"

// binaries are the two programs a server needs, from one directory.
type binaries struct {
	initdb   string
	postgres string
}

// findBinaries returns initdb and postgres from the directory of the
// initdb found on PATH (symlinks resolved, so that initdb finds the
// postgres of its own version), or else from the newest
// debianRoot/<version>/bin holding both.
func findBinaries() (binaries, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	dirs = append(dirs, debianBinDirs()...)
	for _, d := range dirs {
		b := binaries{initdb: filepath.Join(d, "initdb"), postgres: filepath.Join(d, "postgres")}
		if isExecutable(b.initdb) && isExecutable(b.postgres) {
			return b, nil
		}
	}
	return binaries{}, fmt.Errorf("%w: no directory holds both initdb and postgres "+
		"(looked on PATH and in %s/*/bin; Debian's postgresql package installs them there)",
		ErrNotInstalled, debianRoot)
}

// debianBinDirs returns debianRoot/<version>/bin for each version
// directory, newest version first.
func debianBinDirs() []string {
	entries, err := os.ReadDir(debianRoot)
	if err != nil {
		return nil
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versionLess(versions[j], versions[i]) })
	dirs := make([]string, len(versions))
	for i, v := range versions {
		dirs[i] = filepath.Join(debianRoot, v, "bin")
	}
	return dirs
}

// versionLess orders dotted versions by their numeric parts ("9.6" <
// "10" < "15"); a part that is not a number counts as -1.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		na, nb := versionPart(pa, i), versionPart(pb, i)
		if na != nb {
			return na < nb
		}
	}
	return a < b
}

// versionPart is parts[i] as a number: 0 past the end, -1 when not a number.
func versionPart(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n, err := strconv.Atoi(parts[i])
	if err != nil {
		return -1
	}
	return n
}

// isExecutable reports whether path is a regular file with an execute bit.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
