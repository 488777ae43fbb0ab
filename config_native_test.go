package anamnesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// native_import in config.json: absent means on, false turns the import
// off, anything but a boolean is refused by name (a typo must not
// silently leave it on or off).
func TestConfigNativeImport(t *testing.T) {
	for _, tc := range []struct {
		json    string
		off     bool
		wantErr bool
	}{
		{`{}`, false, false},
		{`{"native_import": true}`, false, false},
		{`{"native_import": false}`, true, false},
		{`{"native_import": "no"}`, false, true},
		{`{"native_import": 0}`, false, true},
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(home)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "native_import") {
				t.Errorf("%s: want an error naming native_import, got %v", tc.json, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if c.NativeImportOff != tc.off {
			t.Errorf("%s: NativeImportOff = %v, want %v", tc.json, c.NativeImportOff, tc.off)
		}
		// SaveConfig keeps the key (it is kept in raw like any other).
		if err := SaveConfig(home, c); err != nil {
			t.Fatal(err)
		}
		again, err := LoadConfig(home)
		if err != nil || again.NativeImportOff != tc.off {
			t.Errorf("%s: after SaveConfig NativeImportOff = %v (%v), want %v", tc.json, again.NativeImportOff, err, tc.off)
		}
	}
}
