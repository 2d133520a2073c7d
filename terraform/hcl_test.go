package terraform

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// module is the parsed .tf files of one directory.
type module struct {
	blocks []*hclsyntax.Block
	src    map[string][]byte // file name → source, for expression text
}

func parseModule(t *testing.T, dir string) *module {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("glob %s/*.tf = %v, %v; want .tf files", dir, files, err)
	}
	m := &module{src: map[string][]byte{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, diags := hclsyntax.ParseConfig(b, f, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("parse %s: %v", f, diags)
		}
		m.src[f] = b
		m.blocks = append(m.blocks, file.Body.(*hclsyntax.Body).Blocks...)
	}
	return m
}

// block returns the top-level block kind "typ" "name" (resource, data).
func (m *module) block(t *testing.T, kind, typ, name string) *hclsyntax.Body {
	t.Helper()
	for _, b := range m.blocks {
		if b.Type == kind && len(b.Labels) == 2 && b.Labels[0] == typ && b.Labels[1] == name {
			return b.Body
		}
	}
	t.Fatalf("%s %q %q not found", kind, typ, name)
	return nil
}

// variable returns the body of variable name.
func (m *module) variable(t *testing.T, name string) *hclsyntax.Body {
	t.Helper()
	for _, b := range m.blocks {
		if b.Type == "variable" && len(b.Labels) == 1 && b.Labels[0] == name {
			return b.Body
		}
	}
	t.Fatalf("variable %q not found", name)
	return nil
}

// output returns the body of output name.
func (m *module) output(t *testing.T, name string) *hclsyntax.Body {
	t.Helper()
	for _, b := range m.blocks {
		if b.Type == "output" && len(b.Labels) == 1 && b.Labels[0] == name {
			return b.Body
		}
	}
	t.Fatalf("output %q not found", name)
	return nil
}

// ofType returns the names of the top-level kind blocks of type typ.
func (m *module) ofType(kind, typ string) []string {
	var names []string
	for _, b := range m.blocks {
		if b.Type == kind && len(b.Labels) == 2 && b.Labels[0] == typ {
			names = append(names, b.Labels[1])
		}
	}
	return names
}

// local returns the expression of local value name.
func (m *module) local(name string) hclsyntax.Expression {
	for _, b := range m.blocks {
		if b.Type == "locals" {
			if a, ok := b.Body.Attributes[name]; ok {
				return a.Expr
			}
		}
	}
	return nil
}

// text is the source text of expression e, without the quotes of a
// template.
func (m *module) text(e hclsyntax.Expression) string {
	r := e.Range()
	s := string(m.src[r.Filename][r.Start.Byte:r.End.Byte])
	if _, ok := e.(*hclsyntax.TemplateExpr); ok && len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}

// str returns attribute name of body as a literal string, or its source
// text when it is not a constant ("" when absent).
func (m *module) str(body *hclsyntax.Body, name string) string {
	a, ok := body.Attributes[name]
	if !ok {
		return ""
	}
	if v, diags := a.Expr.Value(nil); !diags.HasErrors() && v.Type().FriendlyName() == "string" {
		return v.AsString()
	}
	return m.text(a.Expr)
}

// strs returns a list attribute: each element's literal string or source text.
func (m *module) strs(body *hclsyntax.Body, name string) []string {
	a, ok := body.Attributes[name]
	if !ok {
		return nil
	}
	elems, diags := hcl.ExprList(a.Expr)
	if diags.HasErrors() {
		return []string{m.text(a.Expr)}
	}
	var out []string
	for _, e := range elems {
		se := e.(hclsyntax.Expression)
		if v, d := se.Value(nil); !d.HasErrors() && v.Type().FriendlyName() == "string" {
			out = append(out, v.AsString())
		} else {
			out = append(out, m.text(se))
		}
	}
	return out
}

// children returns the nested blocks of type typ.
func children(body *hclsyntax.Body, typ string) []*hclsyntax.Body {
	var out []*hclsyntax.Body
	for _, b := range body.Blocks {
		if b.Type == typ {
			out = append(out, b.Body)
		}
	}
	return out
}

// child returns the only nested block of type typ.
func child(t *testing.T, body *hclsyntax.Body, typ string) *hclsyntax.Body {
	t.Helper()
	c := children(body, typ)
	if len(c) != 1 {
		t.Fatalf("%d %q blocks, want 1", len(c), typ)
	}
	return c[0]
}

// envMap resolves a map expression built of object constructors, merge(),
// filtered copies and local references into name → literal value (or
// source text).
func (m *module) envMap(t *testing.T, e hclsyntax.Expression, into map[string]string) {
	t.Helper()
	switch x := e.(type) {
	case *hclsyntax.ObjectConsExpr:
		for _, it := range x.Items {
			k := hcl.ExprAsKeyword(it.KeyExpr)
			if k == "" {
				v, d := it.KeyExpr.Value(nil)
				if d.HasErrors() {
					t.Fatalf("environment key %s is not a constant", m.text(it.KeyExpr))
				}
				k = v.AsString()
			}
			if v, d := it.ValueExpr.Value(nil); !d.HasErrors() && v.Type().FriendlyName() == "string" {
				into[k] = v.AsString()
			} else {
				into[k] = m.text(it.ValueExpr)
			}
		}
	case *hclsyntax.FunctionCallExpr:
		if x.Name != "merge" {
			t.Fatalf("environment built with %s(), want merge or an object", x.Name)
		}
		for _, a := range x.Args {
			m.envMap(t, a, into)
		}
	case *hclsyntax.ForExpr:
		// A filtered copy ({for k, v in {...} : k => v if COND}): what it
		// may set is what it copies.
		m.envMap(t, x.CollExpr, into)
	case *hclsyntax.ScopeTraversalExpr:
		if x.Traversal.RootName() != "local" || len(x.Traversal) != 2 {
			t.Fatalf("environment refers to %s, want local.NAME", m.text(x))
		}
		name := x.Traversal[1].(hcl.TraverseAttr).Name
		l := m.local(name)
		if l == nil {
			t.Fatalf("local.%s not found", name)
		}
		m.envMap(t, l, into)
	default:
		t.Fatalf("environment expression %s: unsupported %T", m.text(e), e)
	}
}

// goConsts returns the string constants of the Go package in dir whose
// names start with prefix (non-test files).
func goConsts(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s* string constants in %s", prefix, dir)
	}
	return out
}

// fieldCalls returns, sorted, the methods the Go package in dir calls on
// the fields named fields (X.FIELD.Method(…)), parsed from its non-test
// files.
func fieldCalls(t *testing.T, dir string, fields ...string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if recv, ok := sel.X.(*ast.SelectorExpr); ok && slices.Contains(fields, recv.Sel.Name) {
						seen[sel.Sel.Name] = true
					}
				}
			}
			return true
		})
	}
	out := slices.Collect(maps.Keys(seen))
	slices.Sort(out)
	return out
}
