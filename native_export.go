package anamnesis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/nativemem"
)

// ExportOptions say where ExportNative writes.
type ExportOptions struct {
	// Dir is a directory of the project (its git root, or the directory,
	// names Claude Code's memory directory for it).
	Dir string
	// ConfigDir and UserHome as in NativeOptions.
	ConfigDir, UserHome string
	// DryRun plans without writing.
	DryRun bool
}

// ExportReport says what ExportNative did (`native export --json`).
type ExportReport struct {
	Project   string   `json:"project"`
	MemoryDir string   `json:"memory_dir"`
	Written   []string `json:"written"`  // topic files written or rewritten
	Removed   []string `json:"removed"`  // earlier exports whose note is gone
	Kept      []string `json:"kept"`     // files Claude wrote where an export would go: left alone
	LeftOut   []string `json:"left_out"` // notes whose MEMORY.md line did not fit Claude Code's limits
	DryRun    bool     `json:"dry_run,omitempty"`
	Index     string   `json:"index"` // MEMORY.md
	Exported  int      `json:"exported"`
	Available int      `json:"available"` // the other machines' memories of the project
}

// ExportNative writes the memories other machines' Claude recorded for
// the project of opts.Dir into this machine's Claude Code memory
// directory for it, as Claude Code's own files ([nativemem.WriteExport]:
// a topic file each and a marked section of MEMORY.md, within Claude
// Code's limits, never over a file Claude wrote). The Store decides
// which notes and where; nativemem owns the format. Nothing is written
// unless the user runs it: Claude Code owns these files.
func (s *Store) ExportNative(ctx context.Context, opts ExportOptions) (ExportReport, error) {
	rep := ExportReport{DryRun: opts.DryRun}
	userHome, configDir, err := claudeDirs(opts.UserHome, opts.ConfigDir)
	if err != nil {
		return rep, err
	}
	dir, err := projectDir(opts.Dir)
	if err != nil {
		return rep, err
	}
	rep.Project = claudecode.ProjectKey(dir, userHome)
	if rep.MemoryDir, err = exportMemoryDir(configDir, userHome, dir); err != nil {
		return rep, err
	}
	rep.Index = filepath.Join(rep.MemoryDir, nativemem.IndexFile)
	mems, err := s.othersMemories(ctx, rep.Project)
	if err != nil {
		return rep, err
	}
	rep.Available = len(mems)
	res, err := nativemem.WriteExport(rep.MemoryDir, mems, opts.DryRun)
	rep.Written, rep.Removed, rep.Kept, rep.LeftOut, rep.Exported = res.Written, res.Removed, res.Kept, res.LeftOut, res.Exported
	return rep, err
}

// projectDir is the export's project directory, absolute; it must
// exist.
func projectDir(d string) (string, error) {
	dir, err := filepath.Abs(d)
	if err != nil {
		return "", fmt.Errorf("project directory %s: %w", d, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", invalidf("project directory %s is not a directory", d)
	}
	return dir, nil
}

// exportMemoryDir is where Claude Code keeps auto memory for the project
// at dir: autoMemoryDirectory when the user set one, else
// projects/<slug of the repository's root>/memory.
func exportMemoryDir(configDir, userHome, dir string) (string, error) {
	memDir, err := nativemem.AutoMemoryDirectory(configDir, userHome)
	if err != nil || memDir != "" {
		return memDir, err
	}
	return filepath.Join(configDir, "projects", nativemem.ProjectSlug(gitRoot(dir)), "memory"), nil
}

// gitRoot is the work tree root of the repository dir is in
// ([gitsync.Toplevel]: Claude Code keys auto memory by the repository, so
// subdirectories share it), else dir.
func gitRoot(dir string) string {
	if root, ok := gitsync.Toplevel(dir); ok {
		return root
	}
	return dir
}

// othersMemories are the live native memories of project that other
// machines' Claude recorded, as the export writes them.
func (s *Store) othersMemories(ctx context.Context, project string) ([]nativemem.Export, error) {
	hits, err := s.List(ctx, index.Filter{Project: project, ProvSource: NativeSource, Live: true})
	if err != nil {
		return nil, err
	}
	hits = slices.DeleteFunc(hits, func(h index.Hit) bool { return h.MachineID == s.machineID })
	mems := make([]nativemem.Export, 0, len(hits))
	for _, h := range hits {
		mems = append(mems, nativemem.Export{ID: h.ID, Title: h.Title, Body: h.Body, Type: nativeType(h.Tags), MachineID: h.MachineID})
	}
	return mems, nil
}

// nativeType is the Claude Code memory type a native note was imported
// with (its NativeTag:<type> tag), "project" when it has none.
func nativeType(tags []string) string {
	typ := "project"
	for _, t := range tags {
		if k, ok := strings.CutPrefix(t, NativeTag+":"); ok {
			typ = k
		}
	}
	return typ
}
