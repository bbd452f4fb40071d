package sluice

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is this module's path; the root package is the module itself.
const module = "github.com/sluice-go/sluice"

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return files
}

// The root package is the vocabulary every other package imports: it
// must import none of them.
func TestRootPackageImportsNothingOfTheModule(t *testing.T) {
	fset := token.NewFileSet()
	for _, f := range parseDir(t, fset, ".") {
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == module || strings.HasPrefix(path, module+"/") {
				t.Errorf("%s imports %s: package sluice must import nothing else of the module", fset.Position(imp.Pos()), path)
			}
		}
	}
}

// The public packages built on the engine alias only the engine types
// whose methods need the engine's internals; every other public type (and
// value) is defined once, here or in the package itself, so that go doc
// shows it.
func TestPublicPackagesAliasOnlyEngineBoundTypes(t *testing.T) {
	allowed := map[string][]string{
		"pipeline":          {"Partition", "Stream", "End", "RecordOverhead"},
		"pipeline/stagekit": {"Stage", "Probe", "Shared", "Ticket", "Item", "Inlet", "Outlet", "ErrTicketCompleted"},
	}
	for dir, names := range allowed {
		fset := token.NewFileSet()
		for _, f := range parseDir(t, fset, filepath.FromSlash(dir)) {
			internal := internalImports(f)
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range gd.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Assign.IsValid() && internal[pkgOf(s.Type)] && !slices.Contains(names, s.Name.Name) {
							t.Errorf("%s: %s declares type %s as an alias of an internal type; define it in package sluice (or here) instead",
								fset.Position(s.Pos()), dir, s.Name.Name)
						}
					case *ast.ValueSpec:
						for i, v := range s.Values {
							if internal[pkgOf(v)] && !slices.Contains(names, s.Names[i].Name) {
								t.Errorf("%s: %s declares %s as a copy of an internal value; define it in package sluice (or here) instead",
									fset.Position(s.Names[i].Pos()), dir, s.Names[i].Name)
							}
						}
					}
				}
			}
		}
	}
}

// internalImports returns the names under which f imports the module's
// internal packages.
func internalImports(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(path, module+"/") || !strings.Contains(path+"/", "/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = true
	}
	return names
}

// pkgOf returns the package name qualifying e (pkg.Name, pkg.Name[T]),
// or "".
func pkgOf(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.IndexExpr:
		return pkgOf(x.X)
	case *ast.IndexListExpr:
		return pkgOf(x.X)
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}
