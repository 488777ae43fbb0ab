package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/note"
)

// SyncFigures are the sync measurements for one store size: two machines
// (homes) and a bare hub made with the git CLI.
type SyncFigures struct {
	Notes         int
	InitialPush   time.Duration // first sync of a full store: commit everything, push
	InitialPull   time.Duration // first sync of an empty machine: fetch, check out, index
	SyncNothing   time.Duration // median sync with nothing to do on either side
	SyncPull10    time.Duration // median sync pulling 10 edited notes, reindex included
	Reindexed     int           // index rows the pull touched
	CommitNothing time.Duration // stat-based status + commit decision, nothing changed
	CommitOne     time.Duration // commit of one known path (what a write does)
}

// RunSync measures sync on a copy of the generated store of n notes.
func RunSync(ctx context.Context, cfg Config, n int) (SyncFigures, error) {
	f := SyncFigures{Notes: n}
	src, _, err := ensureStore(cfg, n)
	if err != nil {
		return f, err
	}
	root := filepath.Join(cfg.Dir, fmt.Sprintf("sync-%d", n))
	os.RemoveAll(root)
	hub := filepath.Join(root, "hub.git")
	if out, err := exec.Command("git", "init", "--bare", "-b", "main", hub).CombinedOutput(); err != nil {
		return f, fmt.Errorf("git init --bare: %v: %s", err, out)
	}
	homeA, homeB := filepath.Join(root, "a"), filepath.Join(root, "b")
	if err := copyTree(filepath.Join(src, note.PortableDir), filepath.Join(homeA, note.PortableDir)); err != nil {
		return f, err
	}
	open := func(home, machine string) (*anamnesis.Store, error) {
		return anamnesis.Open(ctx, home, anamnesis.Options{MachineID: machine, Remote: hub, Create: true})
	}
	a, err := open(homeA, "bench-a")
	if err != nil {
		return f, err
	}
	defer a.Close()
	t0 := time.Now()
	if _, err := a.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
		return f, err
	}
	f.InitialPush = time.Since(t0)
	cfg.logf("  sync: initial commit+push of %d notes %v", n, f.InitialPush)

	b, err := open(homeB, "bench-b")
	if err != nil {
		return f, err
	}
	defer b.Close()
	t0 = time.Now()
	rep, err := b.Sync(ctx, anamnesis.SyncOptions{})
	if err != nil {
		return f, err
	}
	f.InitialPull = time.Since(t0)
	if rep.Reindexed.Added != n {
		return f, fmt.Errorf("first pull indexed %d notes, want %d", rep.Reindexed.Added, n)
	}
	cfg.logf("  sync: first pull of %d notes (checkout + index) %v", n, f.InitialPull)

	if f.SyncNothing, err = timeMedian(5, func() error { _, err := a.Sync(ctx, anamnesis.SyncOptions{}); return err }); err != nil {
		return f, err
	}
	paths, err := listPaths(filepath.Join(homeB, note.PortableDir))
	if err != nil {
		return f, err
	}
	round := 0
	var pulls []time.Duration
	for i := 0; i < 5; i++ {
		round++
		if err := touch("", paths[round*10:round*10+10], round); err != nil {
			return f, err
		}
		if _, err := b.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
			return f, err
		}
		t0 := time.Now()
		rep, err := a.Sync(ctx, anamnesis.SyncOptions{})
		if err != nil {
			return f, err
		}
		pulls = append(pulls, time.Since(t0))
		f.Reindexed = rep.Reindexed.Added + rep.Reindexed.Updated + rep.Reindexed.Deleted
		if f.Reindexed != 10 {
			return f, fmt.Errorf("pulling 10 edited notes touched %d index rows", f.Reindexed)
		}
	}
	f.SyncPull10 = pct(pulls, 50)
	cfg.logf("  sync: nothing to do %v; pulling 10 edited notes %v (%d index rows)", f.SyncNothing, f.SyncPull10, f.Reindexed)

	r, err := gitsync.Open(ctx, filepath.Join(homeA, note.PortableDir), "bench-a", nil)
	if err != nil {
		return f, err
	}
	if f.CommitNothing, err = timeMedian(5, func() error { _, _, err := r.CommitAll(ctx); return err }); err != nil {
		return f, err
	}
	one := filepath.Join(homeA, note.PortableDir, strings.TrimPrefix(paths[0], filepath.Join(homeB, note.PortableDir)+"/"))
	rel := strings.TrimPrefix(paths[0], filepath.Join(homeB, note.PortableDir)+"/")
	k := 0
	f.CommitOne, err = timeMedianPrep(5, func() error {
		k++
		return touch("", []string{one}, 100+k)
	}, func() error {
		_, committed, err := r.CommitPaths(ctx, []string{rel})
		if err == nil && !committed {
			err = fmt.Errorf("nothing committed")
		}
		return err
	})
	if err != nil {
		return f, err
	}
	cfg.logf("  git: status+commit decision with nothing changed %v; commit of one path %v", f.CommitNothing, f.CommitOne)
	return f, nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}
