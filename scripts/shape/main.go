// Command shape checks the size of the module's hand-written code (issue 14,
// item 5): no .go file over 600 lines, and no function over 80 lines in the
// files that are not tests. Test files are held to the file rule only, since
// their long functions are mostly tables. It skips the separate bench module,
// testdata and generated files ("Code generated ... DO NOT EDIT."), and the
// functions in the allowlist below, which return tables of data.
//
// It prints every file and function over its limit as file:line, name and
// length, and exits 1 when there is one; with -list it only prints.
//
//	go run ./scripts/shape
//	go run ./scripts/shape -list
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
	"strings"
)

const (
	// maxFileLines is the most lines a hand-written .go file may have.
	maxFileLines = 600
	// maxFuncLines is the most lines a function declaration may span, from
	// its func keyword to its closing brace, in a file that is not a test.
	maxFuncLines = 80
)

// tables lists the functions, by file (slash-separated, relative to the
// module root) and name, that are excepted from the function rule because
// their body is a table of test data rather than logic. An entry that names
// no function any more is reported, so that the list cannot outlive them.
var tables = map[string]bool{
	// The conformance suite's timeline scenarios: each returns a literal
	// []Scenario of explicit instants and expected decisions.
	"admittest/scenarios_bucket.go:bucketScenarios":        true,
	"admittest/scenarios_window.go:fixedWindowScenarios":   true,
	"admittest/scenarios_window.go:slidingWindowScenarios": true,
	"admittest/scenarios_log.go:slidingLogScenarios":       true,
}

// finding is one file or function over its limit.
type finding struct {
	file  string // slash-separated, relative to the root
	line  int
	name  string // the function, or "" for a whole file
	lines int
	max   int
	stale bool // an allowlist entry that names no function
}

func (f finding) String() string {
	if f.stale {
		return fmt.Sprintf("%s: %s is in the allowlist of tables but not declared there", f.file, f.name)
	}
	if f.name == "" {
		return fmt.Sprintf("%s:%d: file has %d lines (max %d)", f.file, f.line, f.lines, f.max)
	}
	return fmt.Sprintf("%s:%d: %s has %d lines (max %d)", f.file, f.line, f.name, f.lines, f.max)
}

func main() {
	list := flag.Bool("list", false, "only print what is over; exit 0 anyway")
	flag.Parse()
	found, err := check(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "shape:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Println(f)
	}
	if len(found) > 0 && !*list {
		fmt.Fprintf(os.Stderr, "shape: %d over the limits (files %d lines, functions %d lines)\n",
			len(found), maxFileLines, maxFuncLines)
		os.Exit(1)
	}
}

// check returns what is over its limit in the .go files under root, sorted
// by file and line, leaving out the separate bench module and testdata.
func check(root string) ([]finding, error) {
	var found []finding
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "bench", "testdata", ".git":
				if path != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		found = append(found, checkFile(fset, f, filepath.ToSlash(rel), seen)...)
		return nil
	})
	for entry := range tables {
		if !seen[entry] {
			file, name, _ := strings.Cut(entry, ":")
			found = append(found, finding{file: file, name: name, stale: true})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].file != found[j].file {
			return found[i].file < found[j].file
		}
		return found[i].line < found[j].line
	})
	return found, err
}

// checkFile returns what is over its limit in one parsed file named rel,
// and records in seen the allowlisted functions it declares.
func checkFile(fset *token.FileSet, f *ast.File, rel string, seen map[string]bool) []finding {
	var found []finding
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
		found = append(found, finding{file: rel, line: 1, lines: n, max: maxFileLines})
	}
	if strings.HasSuffix(rel, "_test.go") {
		return found
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := funcName(fn)
		if tables[rel+":"+name] {
			seen[rel+":"+name] = true
			continue
		}
		start := fset.Position(fn.Pos()).Line
		n := fset.Position(fn.End()).Line - start + 1
		if n > maxFuncLines {
			found = append(found, finding{file: rel, line: start, name: name, lines: n, max: maxFuncLines})
		}
	}
	return found
}

// funcName names a function as Go does in a stack trace: "f", or
// "(*T).m" and "T.m" for methods.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	recv := "?"
	if id, ok := t.(*ast.Ident); ok {
		recv = id.Name
	}
	if star != "" {
		return "(" + star + recv + ")." + fn.Name.Name
	}
	return recv + "." + fn.Name.Name
}
