package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packageRows returns the rows of the package table of the markdown file
// at path: the lines starting with "| `" between heading and the next
// heading of its level or above.
func packageRows(t *testing.T, path, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, heading)
	}
	var rows []string
	for line := range strings.SplitSeq(section, "\n") {
		if strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "####") {
			break
		}
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("the section %q of %s has no package table", heading, path)
	}
	return rows
}

// The README's package table is docs/architecture.md's, row for row, and
// names every package of the module.
func TestPackageTablesMatchAndNameEveryPackage(t *testing.T) {
	readme := packageRows(t, "../../README.md", "## Packages")
	arch := packageRows(t, "../../docs/architecture.md", "## The packages")
	if !slices.Equal(readme, arch) {
		for i := range max(len(readme), len(arch)) {
			var r, a string
			if i < len(readme) {
				r = readme[i]
			}
			if i < len(arch) {
				a = arch[i]
			}
			if r != a {
				t.Fatalf("row %d differs:\nREADME.md:            %s\ndocs/architecture.md: %s", i+1, r, a)
			}
		}
	}
	named := map[string]bool{}
	for _, row := range arch {
		name, _, _ := strings.Cut(strings.TrimPrefix(row, "| `"), "`")
		named[name] = true
	}
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".go") {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(dir)
		if pkg == "." {
			pkg = "sluice"
		}
		if !named[pkg] {
			t.Errorf("package %s is not in the package table of docs/architecture.md and README.md", pkg)
			named[pkg] = true // once
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
