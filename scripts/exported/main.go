// Command exported counts the exported identifiers of the module's public
// packages (not internal/, not commands): every exported package-level
// constant, variable, type and function and every exported method of an
// exported type, in the files that are neither tests nor generated code
// (with -fields, the exported fields of structs and methods of interfaces
// too). It prints the count per package and the total, and exits 1 when a
// limit given with -max (the module) or -max-pkg PKG=N is exceeded. With
// -list it names each identifier under its package's count.
//
//	go run ./scripts/exported -max 600 -max-pkg server=60
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	max := flag.Int("max", 0, "fail when the module has more exported identifiers (0: no limit)")
	list := flag.Bool("list", false, "list each package's exported identifiers under its count")
	fields = flag.Bool("fields", false, "count the exported fields of structs and methods of interfaces too")
	var pkgMax multiFlag
	flag.Var(&pkgMax, "max-pkg", "PKG=N: fail when package PKG (its directory, such as server) has more than N; repeatable")
	flag.Parse()
	names, err := collect(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "exported:", err)
		os.Exit(2)
	}
	dirs := make([]string, 0, len(names))
	counts := map[string]int{}
	total := 0
	for d, list := range names {
		dirs = append(dirs, d)
		counts[d] = len(list)
		total += len(list)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		fmt.Printf("%5d  %s\n", counts[d], d)
		if *list {
			sort.Strings(names[d])
			for _, n := range names[d] {
				fmt.Printf("       %s\n", n)
			}
		}
	}
	fmt.Printf("%5d  exported identifiers in the module\n", total)
	failed := false
	if *max > 0 && total > *max {
		fmt.Fprintf(os.Stderr, "exported: %d exported identifiers, the limit is %d\n", total, *max)
		failed = true
	}
	for _, pm := range pkgMax {
		if counts[pm.dir] > pm.n {
			fmt.Fprintf(os.Stderr, "exported: %s has %d exported identifiers, the limit is %d\n", pm.dir, counts[pm.dir], pm.n)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// fields is -fields.
var fields *bool

type pkgLimit struct {
	dir string
	n   int
}

type multiFlag []pkgLimit

func (m *multiFlag) String() string { return fmt.Sprint(*m) }

func (m *multiFlag) Set(s string) error {
	dir, n, ok := strings.Cut(s, "=")
	v, err := strconv.Atoi(n)
	if !ok || err != nil || v < 0 {
		return fmt.Errorf("want PKG=N, got %q", s)
	}
	*m = append(*m, pkgLimit{filepath.Clean(dir), v})
	return nil
}

// collect returns the exported identifiers of each package directory under
// root, leaving out the separate bench module, testdata and this command.
func collect(root string) (map[string][]string, error) {
	names := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "bench", "testdata", "scripts", "internal", ".git":
				if path != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) || f.Name.Name == "main" {
			return nil
		}
		names[filepath.Dir(path)] = append(names[filepath.Dir(path)], exportedIn(f)...)
		return nil
	})
	return names, err
}

// exportedIn returns the exported identifiers a file declares, methods
// written as Type.Method.
func exportedIn(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			} else if recv, ok := exportedRecv(d.Recv); ok {
				names = append(names, recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, name := range s.Names {
						if name.IsExported() {
							names = append(names, name.Name)
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					names = append(names, s.Name.Name)
					if *fields {
						names = append(names, members(s.Name.Name, s.Type)...)
					}
				}
			}
		}
	}
	return names
}

// members returns the exported fields of a struct type and methods of an
// interface type.
func members(typ string, t ast.Expr) []string {
	var list *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	default:
		return nil
	}
	var names []string
	for _, f := range list.List {
		for _, name := range f.Names {
			if name.IsExported() {
				names = append(names, typ+"."+name.Name)
			}
		}
	}
	return names
}

// exportedRecv returns a method's receiver type and whether it is exported.
func exportedRecv(recv *ast.FieldList) (string, bool) {
	if len(recv.List) == 0 {
		return "", false
	}
	t := recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name, x.IsExported()
		default:
			return "", false
		}
	}
}
