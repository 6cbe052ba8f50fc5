package sluicetype_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	// Linked so that this test runs again whenever one of them changes.
	_ "github.com/sluicehq/sluice/flow"
	_ "github.com/sluicehq/sluice/flow/flowtest"
	_ "github.com/sluicehq/sluice/idempotency"
	_ "github.com/sluicehq/sluice/lua"
	_ "github.com/sluicehq/sluice/runtime"
	_ "github.com/sluicehq/sluice/runtime/isolated"
	_ "github.com/sluicehq/sluice/step"
	_ "github.com/sluicehq/sluice/sticky"
)

// publicPackages are the packages users import; none of their exported
// names may lead to a type of an internal package, or go doc would show
// it as an opaque name the user cannot look up.
var publicPackages = []string{
	"github.com/sluicehq/sluice/flow",
	"github.com/sluicehq/sluice/flow/admin",
	"github.com/sluicehq/sluice/flow/flowtest",
	"github.com/sluicehq/sluice/idempotency",
	"github.com/sluicehq/sluice/lua",
	"github.com/sluicehq/sluice/runtime",
	"github.com/sluicehq/sluice/runtime/isolated",
	"github.com/sluicehq/sluice/sluicetype",
	"github.com/sluicehq/sluice/step",
	"github.com/sluicehq/sluice/sticky",
	"github.com/sluicehq/sluice/web",
}

// TestPublicAPINamesNoInternalType loads the public packages' export data
// and walks every exported name: function and method signatures, exported
// struct fields, variables, constants, alias targets and type parameters'
// constraints. Any type from a package under internal/ is a failure.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	exports := exportFiles(t)
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, path := range publicPackages {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		w := &walker{seen: map[types.Type]bool{}}
		for _, name := range pkg.Scope().Names() {
			obj := pkg.Scope().Lookup(name)
			if !obj.Exported() {
				continue
			}
			w.at = path + "." + name
			if tn, ok := obj.(*types.TypeName); ok && tn.IsAlias() {
				w.leak(types.Unalias(tn.Type()), "is an alias of")
			}
			w.walk(obj.Type())
		}
		for _, l := range w.leaks {
			t.Error(l)
		}
	}
}

// exportFiles maps every package the public ones depend on to its export
// data, built by the go command.
func exportFiles(t *testing.T) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}, publicPackages...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			m[path] = file
		}
	}
	return m
}

const (
	ours           = "github.com/sluicehq/sluice/"
	internalPrefix = ours + "internal/"
)

type walker struct {
	at    string
	seen  map[types.Type]bool
	leaks []string
}

func (w *walker) leak(t types.Type, how string) {
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil && strings.HasPrefix(n.Obj().Pkg().Path(), internalPrefix) {
		w.leaks = append(w.leaks, fmt.Sprintf("%s %s %s", w.at, how, n))
	}
}

func (w *walker) walk(t types.Type) {
	if t == nil || w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		w.walk(types.Unalias(t))
	case *types.Named:
		w.leak(t, "names")
		for a := range t.TypeArgs().Types() {
			w.walk(a)
		}
		if p := t.Obj().Pkg(); p == nil || !strings.HasPrefix(p.Path(), ours) || strings.HasPrefix(p.Path(), internalPrefix) {
			return // another module's type, or a leak already reported
		}
		for m := range t.Methods() {
			if m.Exported() {
				w.walk(m.Type())
			}
		}
		w.walk(t.Underlying())
	case *types.Pointer:
		w.walk(t.Elem())
	case *types.Slice:
		w.walk(t.Elem())
	case *types.Array:
		w.walk(t.Elem())
	case *types.Map:
		w.walk(t.Key())
		w.walk(t.Elem())
	case *types.Chan:
		w.walk(t.Elem())
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				w.walk(f.Type())
			}
		}
	case *types.Signature:
		for v := range t.Params().Variables() {
			w.walk(v.Type())
		}
		for v := range t.Results().Variables() {
			w.walk(v.Type())
		}
		for tp := range t.TypeParams().TypeParams() {
			w.walk(tp.Constraint())
		}
	case *types.Interface:
		for m := range t.Methods() {
			if m.Exported() {
				w.walk(m.Type())
			}
		}
		for e := range t.EmbeddedTypes() {
			w.walk(e)
		}
	case *types.TypeParam:
		w.walk(t.Constraint())
	}
}
