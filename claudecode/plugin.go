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
// looked at: init's hooks are for every project.
func FindPlugin(claudeDir string) (string, error) {
	p := filepath.Join(claudeDir, "settings.json")
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	var settings struct {
		EnabledPlugins map[string]json.RawMessage `json:"enabledPlugins"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		return "", fmt.Errorf("%s is not valid JSON: %w", p, err)
	}
	var enabled []string
	for id, v := range settings.EnabledPlugins {
		name, _, ok := strings.Cut(id, "@")
		// A value other than true (false, or a list of versions some
		// releases wrote) is not taken as enabled.
		if ok && name == PluginName && string(v) == "true" {
			enabled = append(enabled, id)
		}
	}
	if len(enabled) == 0 {
		return "", nil
	}
	slices.Sort(enabled)
	p = filepath.Join(claudeDir, "plugins", "installed_plugins.json")
	if data, err = os.ReadFile(p); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	var installed struct {
		Plugins map[string][]struct {
			Scope string `json:"scope"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &installed); err != nil {
		return "", fmt.Errorf("%s is not valid JSON: %w", p, err)
	}
	for _, id := range enabled {
		for _, inst := range installed.Plugins[id] {
			if inst.Scope == "user" {
				return id, nil
			}
		}
	}
	return "", nil
}
