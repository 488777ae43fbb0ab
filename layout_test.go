package anamnesis

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestImportsPointDown reads CONTRIBUTING.md's "Where things live" table
// (top row: the highest layer) and the import graph (`go list`), and fails
// when a package imports one in its own row or above it, or when a
// package of the module has no row: the table is the layering, and the
// test keeps the two from drifting apart.
func TestImportsPointDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to read the import graph with")
	}
	md, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/anamnesis-memory/anamnesis"
	imports := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				imports[f[0]] = append(imports[f[0]], imp)
			}
		}
		if _, ok := imports[f[0]]; !ok {
			imports[f[0]] = nil
		}
	}
	row, err := layers(string(md), module, imports)
	if err != nil {
		t.Fatal(err)
	}
	short := func(p string) string {
		if p == module {
			return "the root package"
		}
		return strings.TrimPrefix(p, module+"/") + "/"
	}
	for pkg, imps := range imports {
		r, ok := row[pkg]
		if !ok {
			t.Errorf("%s has no row in CONTRIBUTING.md's \"Where things live\" table", short(pkg))
			continue
		}
		for _, imp := range imps {
			if ri, ok := row[imp]; ok && ri <= r {
				t.Errorf("%s (row %d) imports %s (row %d): a package may import only packages below it in CONTRIBUTING.md's table",
					short(pkg), r+1, short(imp), ri+1)
			}
		}
	}
}

// layers maps each package of the module to its row in the table of the
// "Where things live" section (0: the top row). A row names its packages
// in backquotes ("`index/`", "root `anamnesis`"); names that are no
// package (testdata) are ignored.
func layers(md, module string, pkgs map[string][]string) (map[string]int, error) {
	_, section, ok := strings.Cut(md, "## Where things live")
	if !ok {
		return nil, os.ErrNotExist
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	tick := regexp.MustCompile("`([^`]+)`")
	row := map[string]int{}
	n := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| path") || strings.HasPrefix(line, "| ---") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		found := false
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			p := module
			if name := strings.TrimSuffix(m[1], "/"); name != "anamnesis" {
				p = module + "/" + name
			}
			if _, ok := pkgs[p]; ok {
				row[p] = n
				found = true
			}
		}
		if found {
			n++
		}
	}
	return row, nil
}
