package consolidate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Settings are the model settings, resolved as the Python tool resolves
// them (inventory §8.1): the environment (non-empty) over config.json's
// "reflection" block over the defaults.
type Settings struct {
	Provider  string // heuristic (none), openai, deepseek, local, claude
	Model     string
	BaseURL   string
	APIKey    string
	Timeout   time.Duration
	MaxTokens int // sizes the input window: MaxTokens*4 characters
	Auto      bool
	// Claude is the Claude Code CLI's path for provider claude ("" : PATH).
	Claude string
}

// ResolveSettings reads env (os.Getenv in the CLI) and config.json's
// "reflection" object (nil when absent). Malformed numbers fall back to
// the defaults, as in the Python tool.
func ResolveSettings(env func(string) string, reflection json.RawMessage) Settings {
	var file struct {
		Provider  string          `json:"provider"`
		Model     string          `json:"model"`
		BaseURL   string          `json:"base_url"`
		APIKey    string          `json:"api_key"`
		Timeout   json.RawMessage `json:"timeout"`
		MaxTokens json.RawMessage `json:"max_tokens"`
		Auto      json.RawMessage `json:"auto"`
		Claude    string          `json:"claude"`
	}
	if len(reflection) > 0 {
		_ = json.Unmarshal(reflection, &file) // an unreadable block is no block, as in Python
	}
	pick := func(fileVal string, keys ...string) string {
		for _, k := range keys {
			if v := strings.TrimSpace(env(k)); v != "" {
				return v
			}
		}
		return fileVal
	}
	s := Settings{
		Provider:  strings.ToLower(pick(file.Provider, "ANAMNESIS_REFLECTION_PROVIDER")),
		Model:     pick(file.Model, "ANAMNESIS_REFLECTION_MODEL"),
		BaseURL:   pick(file.BaseURL, "ANAMNESIS_REFLECTION_BASE_URL"),
		APIKey:    pick(file.APIKey, "ANAMNESIS_REFLECTION_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY"),
		Claude:    pick(file.Claude, "ANAMNESIS_REFLECTION_CLAUDE"),
		Timeout:   30 * time.Second,
		MaxTokens: 120000,
	}
	if s.Provider == "" {
		s.Provider = "heuristic"
	}
	if v := pick(rawString(file.Timeout), "ANAMNESIS_REFLECTION_TIMEOUT"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
			s.Timeout = time.Duration(f * float64(time.Second))
		}
	}
	if v := pick(rawString(file.MaxTokens), "ANAMNESIS_REFLECTION_MAX_TOKENS"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 1 {
			s.MaxTokens = int(f)
		}
	}
	switch strings.ToLower(pick(rawString(file.Auto), "ANAMNESIS_REFLECT_AUTO")) {
	case "1", "true", "yes", "on":
		s.Auto = true
	}
	return s
}

// rawString is a JSON scalar as text: "30", 30 and true all read alike.
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

// NewModel builds the backend the settings name. Provider claude needs
// nothing else (the CLI brings its login); the OpenAI-compatible providers
// need model, base_url and api_key, as in the Python tool (local servers
// take any key). heuristic, the default, is no model: an error saying what
// to set.
func NewModel(s Settings, maxBudgetUSD float64) (Model, error) {
	switch s.Provider {
	case "claude":
		return Claude{Path: s.Claude, Model: s.Model, MaxBudgetUSD: maxBudgetUSD}, nil
	case "openai", "deepseek", "local":
		if s.Model == "" || s.BaseURL == "" || s.APIKey == "" {
			return nil, fmt.Errorf("provider %s needs a model, a base URL and an API key (ANAMNESIS_REFLECTION_MODEL, _BASE_URL, _API_KEY or reflection.* in config.json)", s.Provider)
		}
		return OpenAI{Provider: s.Provider, Model: s.Model, BaseURL: s.BaseURL, APIKey: s.APIKey, Timeout: s.Timeout}, nil
	case "heuristic":
		return nil, fmt.Errorf("no model configured: set ANAMNESIS_REFLECTION_PROVIDER to claude (the Claude Code CLI you are logged in to) or openai/deepseek/local with _MODEL, _BASE_URL and _API_KEY")
	}
	return nil, fmt.Errorf("unknown reflection provider %q (want claude, openai, deepseek or local)", s.Provider)
}
