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
// test keeps the two from drifting apart. Imports from outside the module
// (not the standard library) must be named in the package's row's "may
// import" column (thirdParty lists the names).
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
	imports := map[string][]string{}  // package -> the module's packages it imports
	external := map[string][]string{} // package -> the third-party packages it imports
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				imports[f[0]] = append(imports[f[0]], imp)
			} else if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				external[f[0]] = append(external[f[0]], imp)
			}
		}
		if _, ok := imports[f[0]]; !ok {
			imports[f[0]] = nil
		}
	}
	row, allowed, err := layers(string(md), module, imports)
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
	for pkg, imps := range external {
		if _, ok := row[pkg]; !ok {
			continue // reported above
		}
		for _, imp := range imps {
			name := thirdPartyName(imp)
			switch {
			case name == "":
				t.Errorf("%s imports %s, which has no name in layout_test.go's thirdParty: name it there and in the \"may import\" column of the rows that may use it",
					short(pkg), imp)
			case !allowed[pkg][name]:
				t.Errorf("%s imports %s (%s), which its row's \"may import\" column in CONTRIBUTING.md's table does not name", short(pkg), imp, name)
			}
		}
	}
}

// thirdParty names the modules outside this one that packages may import,
// by the name the "may import" column uses, with their import path
// prefixes. Like restic's depguard rules, a dependency is confined to the
// packages whose row names it: go-git to gitsync (and githooks), SQLite to
// index, Tailscale to tailnet.
var thirdParty = map[string][]string{
	"go-git":     {"github.com/go-git/"},
	"sqlite":     {"modernc.org/"},
	"tailscale":  {"tailscale.com/"},
	"yaml":       {"go.yaml.in/yaml/", "gopkg.in/yaml."},
	"ulid":       {"github.com/oklog/ulid/"},
	"x/sys":      {"golang.org/x/sys/"},
	"x/crypto":   {"golang.org/x/crypto/"},
	"x/term":     {"golang.org/x/term"},
	"go-diff":    {"github.com/sergi/go-diff/"},
	"urfave/cli": {"github.com/urfave/cli/"},
	"mcp-sdk":    {"github.com/modelcontextprotocol/go-sdk/"},
	"chromedp":   {"github.com/chromedp/"},
}

// thirdPartyName is the thirdParty name of an import path, "" for none.
func thirdPartyName(imp string) string {
	for name, prefixes := range thirdParty {
		for _, p := range prefixes {
			if strings.HasPrefix(imp, p) || imp == strings.TrimSuffix(p, "/") {
				return name
			}
		}
	}
	return ""
}

// layers maps each package of the module to its row in the table of the
// "Where things live" section (0: the top row), and to the thirdParty
// names its row's "may import" column gives. A row names its packages in
// backquotes ("`index/`", "root `anamnesis`"); names that are no package
// (testdata) are ignored.
func layers(md, module string, pkgs map[string][]string) (map[string]int, map[string]map[string]bool, error) {
	_, section, ok := strings.Cut(md, "## Where things live")
	if !ok {
		return nil, nil, os.ErrNotExist
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	tick := regexp.MustCompile("`([^`]+)`")
	row := map[string]int{}
	allowed := map[string]map[string]bool{}
	n := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| path") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(line, "|")
		first := cells[1]
		may := map[string]bool{}
		if len(cells) > 3 {
			for _, w := range strings.FieldsFunc(cells[3], func(r rune) bool { return r == ',' || r == ' ' }) {
				if _, ok := thirdParty[w]; ok {
					may[w] = true
				}
			}
		}
		found := false
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			p := module
			if name := strings.TrimSuffix(m[1], "/"); name != "anamnesis" {
				p = module + "/" + name
			}
			if _, ok := pkgs[p]; ok {
				row[p] = n
				allowed[p] = may
				found = true
			}
		}
		if found {
			n++
		}
	}
	return row, allowed, nil
}
