package claudecode

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorthKeepingSessions: real-looking transcripts, and whether each is
// worth an episodic note.
func TestWorthKeepingSessions(t *testing.T) {
	cases := []struct {
		file string
		keep bool
		why  string
	}{
		{"greeting", false, "no file changed, no state-changing command, no decision"},
		{"question", false, "no file changed, no state-changing command, no decision"},
		{"slash-command", false, "no prompt"},
		{"memory-write", false, "its decision was saved as a durable note"},
		// The plugin's tool names (issue 25): no episodic echo either.
		{"memory-write-plugin", false, "its decision was saved as a durable note"},
		{"edit", true, "files changed"},
		{"decision", true, "decision recorded"},
		{"commit", true, "state-changing command"},
	}
	for _, c := range cases {
		s, err := ParseTranscript(filepath.Join("testdata", "sessions", c.file+".jsonl"))
		if err != nil || s.Skipped != 0 {
			t.Fatalf("%s: %v (%d lines skipped)", c.file, err, s.Skipped)
		}
		if keep, why := WorthKeeping(s); keep != c.keep || why != c.why {
			t.Errorf("%s: WorthKeeping = %v %q, want %v %q", c.file, keep, why, c.keep, c.why)
		}
		mem := &savedMemory{}
		r, err := Capture(context.Background(), Env{Memory: mem}, Input{TranscriptPath: filepath.Join("testdata", "sessions", c.file+".jsonl")}, "session-end")
		if err != nil || (r.Skipped == "") != c.keep || len(mem.notes) != map[bool]int{true: 1}[c.keep] {
			t.Errorf("%s: capture %+v %v, %d notes", c.file, r, err, len(mem.notes))
		}
		if !c.keep && r.Skipped != c.why {
			t.Errorf("%s: skipped %q, want %q", c.file, r.Skipped, c.why)
		}
	}
}

func TestWorthKeepingRule(t *testing.T) {
	cases := []struct {
		s    Session
		keep bool
	}{
		{Session{}, false},
		{Session{Prompts: []string{"/clear"}, LastOutcome: strings.Repeat("long answer ", 5)}, false},
		{Session{FirstPrompt: "Always squash before merging."}, true},
		{Session{FirstPrompt: "/clear"}, false},
		{Session{Prompts: []string{"fix it"}, Replies: []string{"What should I fix?"}}, false},
		{Session{FilesTouched: []string{"a.go"}}, true},
		{Session{FilesTouched: []string{"a.go"}, MemoryWrites: 1}, true},
		{Session{Commands: []string{"git status", "go test ./..."}}, false},
		{Session{Commands: []string{"git status", "git push"}}, true},
		{Session{Prompts: []string{"from now on, run the linter before committing"}}, true},
		{Session{Prompts: []string{"from now on, run the linter before committing"}, MemoryWrites: 1}, false},
		{Session{Prompts: []string{"what's new?"}, MemoryWrites: 1}, false},
		{Session{Replies: []string{"We decided to keep the v1 API until March."}}, true},
		{Session{Replies: []string{"You should always check the error; never ignore it."}}, false},
	}
	for _, c := range cases {
		if keep, why := WorthKeeping(c.s); keep != c.keep {
			t.Errorf("WorthKeeping(%+v) = %v (%s)", c.s, keep, why)
		}
	}
}

func TestDecisionIn(t *testing.T) {
	cases := []struct {
		text  string
		human bool
		want  bool
	}{
		{"Let's go with SQLite.", true, true},
		{"let’s go with the second option", true, true},
		{"We'll use pnpm for this repo.", true, true},
		{"From now on, squash before merging.", true, true},
		{"Going forward we keep migrations reversible.", false, true},
		{"We decided to drop Python 3.8.", false, true},
		{"Decision: tabs in Makefiles only.", false, true},
		{"Remember that staging has its own database.", true, true},
		{"remember to bump the version", true, true},
		{"Always run gofmt before committing.", true, true},
		{"Never push straight to main.", true, true},
		{"please keep in mind that CI is slow", true, true},
		{"you should never log tokens", true, true},
		{"hello there", true, false},
		{"How does the cart total handle discounts? Is it before or after tax?", true, false},
		{"Should we go with Redis?", true, false},
		{"Do you remember that bug from last week?", true, false},
		{"I always forget how this works. Explain it", true, false},
		{"thanks, that's all I needed", true, false},
		{"This function never returns an error.", false, false},
		{"Always check the exit code.", false, false},
		{"Remember that the cache is per process.", false, false},
		{"The committee decided last year.", false, false},
		{"Run `git config --global pull.rebase true # from now on` to set it.", false, false},
		{"```\n// from now on we use v2\n```\nThat comment explains the switch.", false, false},
	}
	for _, c := range cases {
		if got := DecisionIn(c.text, c.human); got != c.want {
			t.Errorf("DecisionIn(%q, human=%v) = %v", c.text, c.human, got)
		}
	}
}

func TestStateChanging(t *testing.T) {
	yes := []string{
		"git commit -m 'fix: thing'",
		"git add -A && git commit -m \"$(cat <<'EOF'\nfix: x\n\nbody; rm nothing\nEOF\n)\"",
		"git push origin main",
		"git -C ../lib rebase main",
		"git tag v1.2.0",
		"git branch -D old-feature",
		"cd web && npm install left-pad",
		"pnpm add -D vitest",
		"yarn",
		"pip install -r requirements.txt",
		"python3 -m pip install requests",
		"uv pip install ruff",
		"go get github.com/pkg/errors@v0.9.1",
		"go mod tidy",
		"sudo apt-get install -y jq",
		"DATABASE_URL=postgres://x python manage.py migrate",
		"bin/rails db:migrate",
		"npx prisma migrate deploy",
		"alembic upgrade head",
		"rm -rf build/",
		"mv old.go new.go",
		"find . -name '*.orig' | xargs rm",
		"sed -i 's/foo/bar/' config.yaml",
		"perl -pi -e 's/a/b/' x.txt",
		"mkdir -p internal/cache",
		"chmod +x scripts/release.sh",
		"kubectl apply -f deploy.yaml",
		"terraform apply -auto-approve",
		"docker push ghcr.io/alice/shop:1.2",
		"gh pr create --fill",
		"make install",
		"timeout 60 git push",
	}
	no := []string{
		"git status --short",
		"git log --oneline -5 && git diff HEAD~1",
		"git branch -a",
		"git tag -l 'v1.*'",
		"go test ./...",
		"go build ./cmd/shop 2>&1 | tail -3",
		"go mod download",
		"npm test",
		"npm run build",
		"make",
		"ls -la && cat README.md",
		"grep -rn 'rm -rf' scripts/",
		"echo \"git push\"",
		"echo 'sudo rm -rf /' # a warning to show",
		"sed -n '1,20p' main.go",
		"perl -Mstrict -e 'print 1'",
		"kubectl get pods",
		"kubectl rollout status deploy/web",
		"mkdir -p /tmp/scratch && cp out.log /tmp/scratch/",
		"rm -f /tmp/build.log",
		"command -v git",
		"cat <<EOF > /tmp/x\nrm -rf everything\ngit push\nEOF",
		"curl -s https://example.com/migrate-guide",
	}
	for _, c := range yes {
		if !StateChanging(c) {
			t.Errorf("StateChanging(%q) = false", c)
		}
	}
	for _, c := range no {
		if StateChanging(c) {
			t.Errorf("StateChanging(%q) = true", c)
		}
	}
}
