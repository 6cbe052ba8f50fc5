package sluicetype_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// errorsDoc is the one page that lists every error of the public API.
const errorsDoc = "../docs/errors.md"

// errorPackages are the public packages whose errors errorsDoc lists, by
// directory from here.
var errorPackages = []string{".", "../flow", "../flow/admin", "../runtime", "../runtime/isolated", "../step"}

// TestErrorsDocumented: every exported error of the public packages (a
// package-level Err* variable, or an exported type with an Error method)
// is named in docs/errors.md as `package.Name`, so a user who gets one
// finds there when it happens and what to do.
func TestErrorsDocumented(t *testing.T) {
	raw, err := os.ReadFile(errorsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	var all []string
	for _, dir := range errorPackages {
		names := exportedErrors(t, dir)
		if len(names) == 0 {
			t.Errorf("%s: no exported errors found; is the reader broken?", dir)
		}
		all = append(all, names...)
	}
	sort.Strings(all)
	for _, n := range all {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("%s does not list `%s`", errorsDoc, n)
		}
	}
}

// exportedErrors returns, as package.Name, the exported Err* variables
// of the package in dir and its exported types that have an Error method.
func exportedErrors(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg string
	var out []string
	types := map[string]bool{}  // exported types declared
	errors := map[string]bool{} // receiver types with an Error method
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pkg = f.Name.Name
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if d.Tok == token.VAR && n.IsExported() && strings.HasPrefix(n.Name, "Err") {
								out = append(out, pkg+"."+n.Name)
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							types[s.Name.Name] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Error" || len(d.Recv.List) != 1 {
					continue
				}
				rt := d.Recv.List[0].Type
				if st, ok := rt.(*ast.StarExpr); ok {
					rt = st.X
				}
				if id, ok := rt.(*ast.Ident); ok {
					errors[id.Name] = true
				}
			}
		}
	}
	for n := range errors {
		if types[n] {
			out = append(out, pkg+"."+n)
		}
	}
	return out
}
