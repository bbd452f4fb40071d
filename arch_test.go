package sluice

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
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

// No public package declares an alias of an internal type: a public type
// is defined where it is documented, so that go doc shows its fields and
// methods (an alias shows neither), and its methods carry their own
// contract. A public type built on the engine's is a defined type that
// declares each method itself.
func TestPublicPackagesAliasNoInternalType(t *testing.T) {
	for _, dir := range publicDirs(t) {
		fset := token.NewFileSet()
		for _, f := range parseDir(t, fset, dir) {
			for _, name := range internalAliases(f) {
				t.Errorf("%s: package %s declares type %s as an alias of an internal type; define the type there (a struct "+
					"holding the internal value, or a defined type on it) and declare its methods with their doc comments",
					fset.Position(name.Pos()), filepath.ToSlash(dir), name.Name)
			}
		}
	}
}

// The check above finds an alias of an internal type however it is
// written, and nothing else.
func TestInternalAliasesFindsEveryForm(t *testing.T) {
	const src = `package p

import (
	"context"

	"github.com/sluice-go/sluice/internal/engine"
	eng2 "github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice"
)

type Stage = engine.Stage
type (
	Item[T any]  = engine.Item[T]
	Outlets[T any] = []*eng2.Outlet[T]
	fine       = sluice.Record
	alsoFine   = context.Context
	unexported = engine.Stage
)
type Defined engine.Ticket
type Wrapper struct{ s *engine.Stage }
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range internalAliases(f) {
		got = append(got, name.Name)
	}
	if want := []string{"Stage", "Item", "Outlets"}; !slices.Equal(got, want) {
		t.Fatalf("internalAliases found %q, want %q", got, want)
	}
}

// internalAliases returns the names of the exported types f declares as
// aliases of a type that mentions one of the module's internal packages
// (an unexported alias is not part of the package's API: the producers
// embed the shared core under one so that it stays out of go doc).
func internalAliases(f *ast.File) []*ast.Ident {
	internal := internalImports(f)
	var names []*ast.Ident
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			if s := spec.(*ast.TypeSpec); s.Assign.IsValid() && s.Name.IsExported() && mentions(s.Type, internal) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

// mentions reports whether e refers to a name of one of pkgs.
func mentions(e ast.Expr, pkgs map[string]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && pkgs[id.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

// publicDirs returns the module's directories holding a public package:
// every directory with Go files outside internal/ and testdata/.
func publicDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if base := d.Name(); path != "." && (base == "internal" || base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
			return filepath.SkipDir
		}
		if files, _ := filepath.Glob(filepath.Join(path, "*.go")); slices.ContainsFunc(files, func(f string) bool { return !strings.HasSuffix(f, "_test.go") }) {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dirs, filepath.FromSlash("pipeline/stagekit")) {
		t.Fatalf("found the public packages %q, without pipeline/stagekit", dirs)
	}
	return dirs
}

// Values of the internal packages that pipeline and pipeline/stagekit
// re-export keep the engine's identity (an error for errors.Is, a size
// the engine computes); no other value is copied from them.
func TestPublicPackagesCopyOnlyListedInternalValues(t *testing.T) {
	allowed := map[string][]string{
		"pipeline":          {"RecordOverhead"},
		"pipeline/stagekit": {"ErrTicketCompleted"},
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
					s, ok := spec.(*ast.ValueSpec)
					if !ok {
						continue
					}
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
