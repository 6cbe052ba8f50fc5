package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/lua"
)

// goStatus is a status constant of this package's Go files: its value as
// a string's contents or a number's digits.
type goStatus struct {
	value  string
	number bool
}

// goStatuses reads the constants status* (statusOK, statusNoDue, ...) of
// this package's Go files, not its tests.
func goStatuses(t *testing.T) map[string]goStatus {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]goStatus{}
	for _, fname := range files {
		if strings.HasSuffix(fname, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, fname, nil, 0)
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
					name, ok := strings.CutPrefix(id.Name, "status")
					if !ok || name == "" || name[0] < 'A' || name[0] > 'Z' {
						continue
					}
					var v ast.Expr
					if i < len(vs.Values) {
						v = vs.Values[i]
					}
					neg := ""
					if u, ok := v.(*ast.UnaryExpr); ok && u.Op == token.SUB {
						neg, v = "-", u.X
					}
					lit, _ := v.(*ast.BasicLit)
					switch {
					case lit != nil && lit.Kind == token.STRING && neg == "":
						s, _ := strconv.Unquote(lit.Value)
						out[id.Name] = goStatus{value: s}
					case lit != nil && lit.Kind == token.INT:
						out[id.Name] = goStatus{value: neg + lit.Value, number: true}
					default:
						t.Errorf("%s: %s is not a string or integer literal", fset.Position(id.Pos()), id.Name)
					}
				}
			}
		}
	}
	return out
}

// TestLuaStatusesAgree: the statuses scripts answer are the same in Lua
// (table STATUS of lua/lib_names.lua) and Go (the status* constants
// status.go maps), both ways: every Lua entry has a Go constant of the
// same name (effect_error ~ statusEffectError) and value, every Go
// constant a Lua entry, and no two statuses share a value on either side.
func TestLuaStatusesAgree(t *testing.T) {
	luaS, err := lua.Names("STATUS")
	if err != nil {
		t.Fatal(err)
	}
	goS := goStatuses(t)
	if len(luaS) == 0 || len(goS) == 0 {
		t.Fatalf("found %d Lua statuses and %d Go constants", len(luaS), len(goS))
	}
	goOf := map[string]string{} // normalized name -> Go constant
	for n := range goS {
		goOf[strings.ToLower(strings.TrimPrefix(n, "status"))] = n
	}
	show := func(v string, number bool) string {
		if number {
			return v
		}
		return strconv.Quote(v)
	}
	seen := map[goStatus]string{}
	matched := map[string]bool{}
	for _, s := range luaS {
		key := goStatus{s.Value, s.Number}
		if prev, ok := seen[key]; ok {
			t.Errorf("Lua STATUS.%s and STATUS.%s are both %s", prev, s.Key, show(s.Value, s.Number))
		}
		seen[key] = s.Key
		g, ok := goOf[strings.ReplaceAll(s.Key, "_", "")]
		if !ok {
			t.Errorf("Lua STATUS.%s (%s) has no Go constant status* in internal/store", s.Key, show(s.Value, s.Number))
			continue
		}
		matched[g] = true
		if goS[g] != key {
			t.Errorf("STATUS.%s is %s in Lua, %s is %s in Go", s.Key, show(s.Value, s.Number), g,
				show(goS[g].value, goS[g].number))
		}
	}
	values := map[goStatus]string{}
	for g, v := range goS {
		if prev, ok := values[v]; ok {
			t.Errorf("Go %s and %s are both %s", prev, g, show(v.value, v.number))
		}
		values[v] = g
		if !matched[g] {
			t.Errorf("Go %s (%s) has no entry in Lua's table STATUS (lua/lib_names.lua)", g, show(v.value, v.number))
		}
	}
}
