package claudecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FindPlugin returns the id ("anamnesis@<marketplace>") of the anamnesis
// plugin Claude Code has installed and enabled for the user, or "" when
// there is none. Claude Code records an install in
// plugins/installed_plugins.json and enabling in settings.json's
// enabledPlugins; both must hold, so a plugin installed and then disabled
// leaves init's hooks in charge. Enabling in a project's settings is not
// looked at: init's hooks are for every project (they step aside at run
// time where the plugin is active, see PluginActive).
func FindPlugin(claudeDir string) (string, error) {
	return findPlugin(claudeDir, "")
}

// PluginActive returns the id of the anamnesis plugin when Claude Code
// runs it in sessions of projectDir, else "": enabled by the merged
// enabledPlugins of the user's settings.json, the project's
// .claude/settings.json and .claude/settings.local.json (later files
// win, so a project can turn a user's plugin off), and installed for the
// user or for this project (installed_plugins.json's "project" and
// "local" entries name their projectPath). init's hooks call it (as
// `hook NAME --unless-plugin`) so that a project that enables the plugin,
// a team's committed settings for instance, does not get every hook twice.
func PluginActive(claudeDir, projectDir string) (string, error) {
	if projectDir == "" {
		return "", nil
	}
	return findPlugin(claudeDir, filepath.Clean(projectDir))
}

// findPlugin is FindPlugin for projectDir "" and PluginActive otherwise.
func findPlugin(claudeDir, projectDir string) (string, error) {
	files := []string{filepath.Join(claudeDir, "settings.json")}
	if projectDir != "" {
		files = append(files, filepath.Join(projectDir, ".claude", "settings.json"), filepath.Join(projectDir, ".claude", "settings.local.json"))
	}
	enabled, err := enabledPlugins(files)
	if err != nil || len(enabled) == 0 {
		return "", err
	}
	return installedPlugin(claudeDir, projectDir, enabled)
}

// enabledPlugins are the ids (name@marketplace) of our plugin that the
// settings files enable, sorted; a later file overrides an earlier one,
// and a missing file says nothing.
func enabledPlugins(files []string) ([]string, error) {
	merged := map[string]bool{}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		var settings struct {
			EnabledPlugins map[string]json.RawMessage `json:"enabledPlugins"`
		}
		if err := json.Unmarshal(data, &settings); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %w", p, err)
		}
		for id, v := range settings.EnabledPlugins {
			if name, _, ok := strings.Cut(id, "@"); ok && name == PluginName {
				// A value other than true (false, or a list of versions
				// some releases wrote) is not taken as enabled.
				merged[id] = string(v) == "true"
			}
		}
	}
	var enabled []string
	for id, on := range merged {
		if on {
			enabled = append(enabled, id)
		}
	}
	slices.Sort(enabled)
	return enabled, nil
}

// installedPlugin is the first of the enabled ids that Claude Code's
// installed_plugins.json has installed for the user, or for projectDir
// (project or local scope); "" when none is.
func installedPlugin(claudeDir, projectDir string, enabled []string) (string, error) {
	p := filepath.Join(claudeDir, "plugins", "installed_plugins.json")
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	var installed struct {
		Plugins map[string][]struct {
			Scope       string `json:"scope"`
			ProjectPath string `json:"projectPath"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &installed); err != nil {
		return "", fmt.Errorf("%s is not valid JSON: %w", p, err)
	}
	for _, id := range enabled {
		for _, inst := range installed.Plugins[id] {
			switch {
			case inst.Scope == "user":
				return id, nil
			case projectDir != "" && (inst.Scope == "project" || inst.Scope == "local") && inst.ProjectPath != "" && filepath.Clean(inst.ProjectPath) == projectDir:
				return id, nil
			}
		}
	}
	return "", nil
}
