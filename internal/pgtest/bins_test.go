package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installFake makes root/<version>/bin/{initdb,postgres} executables for
// each version, and root/<version>/bin/initdb only for each partial one.
func installFake(t *testing.T, root string, versions, partial []string) {
	t.Helper()
	make := func(v string, names ...string) {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, v := range versions {
		make(v, "initdb", "postgres")
	}
	for _, v := range partial {
		make(v, "initdb")
	}
}

// withoutPostgres hides the machine's PostgreSQL from findBinaries:
// nothing on PATH, debianRoot an empty directory.
func withoutPostgres(t *testing.T) string {
	t.Helper()
	t.Setenv("PATH", t.TempDir())
	old := debianRoot
	debianRoot = t.TempDir()
	t.Cleanup(func() { debianRoot = old })
	return debianRoot
}

// Without initdb on PATH, the newest Debian version holding both
// binaries is used, versions compared as numbers.
func TestFindBinariesNewestDebianVersion(t *testing.T) {
	root := withoutPostgres(t)
	installFake(t, root, []string{"9.6", "10", "15"}, []string{"16"})
	b, err := findBinaries()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "15", "bin", "initdb"); b.initdb != want {
		t.Fatalf("initdb: %s, want %s", b.initdb, want)
	}
	if want := filepath.Join(root, "15", "bin", "postgres"); b.postgres != want {
		t.Fatalf("postgres: %s, want %s", b.postgres, want)
	}
}

// initdb on PATH, a symlink, wins over Debian's directories, with the
// postgres next to the file it links to.
func TestFindBinariesPathFirst(t *testing.T) {
	root := withoutPostgres(t)
	installFake(t, root, []string{"17"}, nil)
	other := t.TempDir()
	installFake(t, other, []string{"14"}, nil)
	path := t.TempDir()
	if err := os.Symlink(filepath.Join(other, "14", "bin", "initdb"), filepath.Join(path, "initdb")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", path)
	b, err := findBinaries()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(other, "14", "bin", "postgres"); b.postgres != want {
		t.Fatalf("postgres: %s, want %s", b.postgres, want)
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"9.6", "10", true}, {"10", "9.6", false}, {"15", "17", true},
		{"15", "15", false}, {"15", "15.1", true}, {"x", "9", true},
	} {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%q, %q) = %v, want %v", c.a, c.b, got, c.less)
		}
	}
}

// fakeTB records how Start ended a test instead of ending it.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(format string, a ...any)  { f.skipped = fmt.Sprintf(format, a...) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }
func (f *fakeTB) Fatal(a ...any)                 { f.failed = fmt.Sprint(a...) }

// Without PostgreSQL, Start skips the test, naming what is missing,
// unless SLUICE_REQUIRE_POSTGRES is set: then it fails it.
func TestStartWithoutPostgres(t *testing.T) {
	withoutPostgres(t)
	if _, _, err := StartMain(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("StartMain: %v, want ErrNotInstalled", err)
	}
	for _, c := range []struct {
		env        string
		skip, fail bool
	}{{"", true, false}, {"1", false, true}} {
		t.Setenv(RequireEnv, c.env)
		tb := &fakeTB{TB: t}
		if srv := Start(tb); srv != nil {
			t.Fatalf("%s=%q: Start returned a server", RequireEnv, c.env)
		}
		if (tb.skipped != "") != c.skip || (tb.failed != "") != c.fail {
			t.Fatalf("%s=%q: skipped %q, failed %q", RequireEnv, c.env, tb.skipped, tb.failed)
		}
		msg := tb.skipped + tb.failed
		for _, want := range []string{"initdb", "postgres", debianRoot, RequireEnv} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s=%q: the message %q does not name %q", RequireEnv, c.env, msg, want)
			}
		}
	}
}
