package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// TestQueryTokenInRemoteNeverShown: a remote whose URL carries a token in
// its query (here beside basic-auth credentials, which this hub checks)
// is shown with the query's values hidden by init, sync, status and
// doctor, text and --json, and memory/ (its .git/config included) never
// holds the token.
func TestQueryTokenInRemoteNeverShown(t *testing.T) {
	parallel(t)
	const basic, query = "tok-basic-2c9e", "qtok-private-7f31d0"
	_, url := startHTTPHub(t, "memory", basic)
	remote := httphub.WithCredentials(url, "memory", basic) + "?private_token=" + query + "#frag-" + query
	shown := strings.Replace(url, "://", "://memory:***@", 1) + "?private_token=***#***"
	uh := t.TempDir()
	home := filepath.Join(uh, ".anamnesis")
	awaitDetached(t, home)
	env := userEnv(uh, "desk")
	run := func(args ...string) result {
		t.Helper()
		r := runCmd(t, env, "", args...)
		noSecret(t, query, strings.Join(args, " "), r.stdout+r.stderr)
		noSecret(t, basic, strings.Join(args, " "), r.stdout+r.stderr)
		return r
	}
	r := mustOK(t, run("init", "--yes", "--remote", remote, "--no-claude", "--no-mcp", "--no-git-hooks"))
	if !strings.Contains(r.stdout, shown) {
		t.Errorf("init does not name the remote as %s:\n%s", shown, r.stdout)
	}
	mustOK(t, run("write", "--type", "semantic", "--title", "heron", "--body", "deploys on Tuesdays"))
	for _, args := range [][]string{{"sync"}, {"sync", "--json"}, {"status"}, {"status", "--json"}, {"doctor"}, {"doctor", "--json"}} {
		if r := run(args...); !strings.Contains(r.stdout, shown) {
			t.Errorf("%v does not name the remote as %s:\n%s", args, shown, r.stdout)
		}
	}
	mem := filepath.Join(home, "memory")
	noSecretInFiles(t, query, mem)
	if got := strings.TrimSpace(testutil.Git(t, mem, "remote", "get-url", "origin")); got != url {
		t.Errorf("origin is %s, want %s", got, url)
	}
}
