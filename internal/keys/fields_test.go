package keys_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/lua"
)

// goConsts reads the constants of this package's Go files (not its tests)
// whose names start with prefix: name -> value and name -> the comment
// line above it, in source order.
func goConsts(t *testing.T, prefix string) (names []string, values, comments map[string]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	values, comments = map[string]string{}, map[string]string{}
	for _, fname := range files {
		if strings.HasSuffix(fname, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, fname, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, prefix) {
						continue
					}
					var lit *ast.BasicLit
					if i < len(vs.Values) {
						lit, _ = vs.Values[i].(*ast.BasicLit)
					}
					if lit == nil || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal", fset.Position(id.Pos()), id.Name)
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					names = append(names, id.Name)
					values[id.Name] = v
					comments[id.Name] = strings.TrimSpace(vs.Doc.Text())
				}
			}
		}
	}
	return names, values, comments
}

// TestLuaFieldsAgree: the job hash's fields are the same in Lua (table F
// of lua/lib_names.lua) and Go (the Field* constants of fields.go), both
// ways: every Lua entry has a Go constant of the same name (state ~
// FieldState, lease_id ~ FieldLeaseID), value and comment, and every Go
// constant a Lua entry; no two fields share a name on either side, and
// no field takes a name of the chunks that long payloads and headers
// spill into.
func TestLuaFieldsAgree(t *testing.T) {
	luaF, err := lua.Names("F")
	if err != nil {
		t.Fatal(err)
	}
	goNames, goValue, goComment := goConsts(t, "Field")
	if len(luaF) == 0 || len(goNames) == 0 {
		t.Fatalf("found %d Lua fields and %d Go constants", len(luaF), len(goNames))
	}
	goOf := map[string]string{} // normalized name -> Go constant
	for _, n := range goNames {
		goOf[strings.ToLower(strings.TrimPrefix(n, "Field"))] = n
	}
	chunk := regexp.MustCompile(`^([hp]?)[1-9][0-9]*$`)
	luaValues, goValues := map[string]string{}, map[string]string{}
	matched := map[string]bool{}
	for _, f := range luaF {
		if prev, ok := luaValues[f.Value]; ok {
			t.Errorf("Lua F.%s and F.%s are both %q", prev, f.Key, f.Value)
		}
		luaValues[f.Value] = f.Key
		if f.Number || f.Value == "" || chunk.MatchString(f.Value) {
			t.Errorf("Lua F.%s = %q: not a field name (empty, a number, or a chunk's name)", f.Key, f.Value)
		}
		g, ok := goOf[strings.ReplaceAll(f.Key, "_", "")]
		if !ok {
			t.Errorf("Lua F.%s (%q) has no Go constant Field%s in internal/keys", f.Key, f.Value, camel(f.Key))
			continue
		}
		matched[g] = true
		if goValue[g] != f.Value {
			t.Errorf("F.%s is %q in Lua, %s is %q in Go", f.Key, f.Value, g, goValue[g])
		}
		if goComment[g] != f.Comment {
			t.Errorf("F.%s and %s have different comments:\n Lua: %s\n Go:  %s", f.Key, g, f.Comment, goComment[g])
		}
	}
	for _, g := range goNames {
		if prev, ok := goValues[goValue[g]]; ok {
			t.Errorf("Go %s and %s are both %q", prev, g, goValue[g])
		}
		goValues[goValue[g]] = g
		if !matched[g] {
			t.Errorf("Go %s (%q) has no entry in Lua's table F (lua/lib_names.lua)", g, goValue[g])
		}
	}
}

// camel is the Go spelling of a Lua name, for messages.
func camel(s string) string {
	var b strings.Builder
	for p := range strings.SplitSeq(s, "_") {
		if p == "id" {
			b.WriteString("ID")
		} else if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}
