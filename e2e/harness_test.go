//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Pinned client versions: the contracts were checked against these.
const (
	claudeCodeVersion = "2.1.332"
	inspectorVersion  = "2.12.0"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// cacheDir holds npm installs between runs ($ANAMNESIS_E2E_CACHE, else
// <repo>/.cache/e2e, which git ignores).
func cacheDir() string {
	if d := os.Getenv("ANAMNESIS_E2E_CACHE"); d != "" {
		return d
	}
	return filepath.Join(repoRoot(), ".cache", "e2e")
}

// anamnesisBinary builds the CLI once per test binary.
func anamnesisBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "anamnesis-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "anamnesis")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/anamnesis")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// npmInstall installs pkg@version under cacheDir()/name once and returns
// the path of its bin.
func npmInstall(t *testing.T, name, pkg, version, bin string) string {
	t.Helper()
	prefix := filepath.Join(cacheDir(), name+"-"+version)
	p := filepath.Join(prefix, "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, pkg+"@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not installed at %s", bin, p)
	}
	return p
}

// user is a throwaway user account: home, Claude config dir, store.
type user struct {
	t     *testing.T
	home  string
	store string
	env   []string
	bin   string
}

func newUser(t *testing.T) *user {
	return newUserAt(t, t.TempDir())
}

// newUserAt is newUser with its home directory at home (created).
func newUserAt(t *testing.T, home string) *user {
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	u := &user{t: t, home: home, store: filepath.Join(home, ".anamnesis"), bin: anamnesisBinary(t)}
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "HOME=") || strings.HasPrefix(e, "CLAUDE_") || strings.HasPrefix(e, "ANAMNESIS_") || strings.HasPrefix(e, "ANTHROPIC_") {
			continue
		}
		u.env = append(u.env, e)
	}
	u.env = append(u.env, "HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"), "ANAMNESIS_MACHINE_ID=e2e",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1")
	return u
}

func (u *user) run(dir string, stdin string, name string, args ...string) (string, string, error) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = u.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (u *user) anamnesis(args ...string) string {
	u.t.Helper()
	out, errs, err := u.run(u.home, "", u.bin, args...)
	if err != nil {
		u.t.Fatalf("anamnesis %v: %v\n%s%s", args, err, out, errs)
	}
	return out
}

// project makes a working directory whose project key is key.
func (u *user) project(key string) string {
	dir := filepath.Join(u.home, "src", key)
	os.MkdirAll(filepath.Join(dir, ".anamnesis"), 0o755)
	os.WriteFile(filepath.Join(dir, ".anamnesis", "project"), []byte(key+"\n"), 0o644)
	return dir
}

// claude runs `claude -p prompt` in dir against the fake API.
func (u *user) claude(claudeBin, dir, apiURL, prompt string, extra ...string) (string, string, error) {
	u.t.Helper()
	saved := u.env
	u.env = append(append([]string{}, u.env...), "ANTHROPIC_API_KEY=sk-ant-test-not-a-real-key-000000000000", "ANTHROPIC_BASE_URL="+apiURL)
	defer func() { u.env = saved }()
	return u.run(dir, "", claudeBin, append([]string{"-p", prompt}, extra...)...)
}
