package anamnesis

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/note"
)

// ConfigFile is the machine-local settings file inside a home.
const ConfigFile = "config.json"

// Config is the part of config.json this package reads. Unknown keys
// (the Python tool's reflection block, for instance) are preserved by
// SaveConfig.
type Config struct {
	MachineID string `json:"machine_id,omitempty"`
	// Remote is a hub (a path or URL), "tailnet" (fetch from every peer
	// that serves anamnesis), or a comma-separated list of peer URLs.
	Remote string `json:"remote,omitempty"`
	// AllowTags are tailnet tags whose nodes may read this machine's memory
	// (besides the same user's own untagged nodes): "tailnet_allow_tags".
	AllowTags []string `json:"-"`
	// TailscaleSocket is tailscaled's socket ("tailscale_socket"; empty:
	// the system one), for a tailscaled started with --socket (a
	// rootless or container install).
	TailscaleSocket string `json:"-"`
	// DecayDays turns on recency decay in search: a note's score is
	// multiplied by exp(-age/DecayDays) ("recall_decay_days"; 0: off).
	DecayDays float64 `json:"-"`
	// NativeImportOff is "native_import": false: Claude Code's auto memory
	// is not imported into memory/ (ImportNative does nothing). The
	// default, with the key absent, is on.
	NativeImportOff bool `json:"-"`
	// NativeImportSkip lists projects (keys) whose Claude Code memories
	// are not imported ("native_import_skip"); notes imported from them
	// before are removed by the next import.
	NativeImportSkip []string `json:"-"`
	// Embedder configures the semantic search leg ("embedder"; nil: off).
	Embedder *EmbedderConfig `json:"-"`
	// SessionStartSyncMS is how long SessionStart waits for the sync it
	// starts before it injects ("session_start_sync_ms"; nil: the
	// default, DefaultSessionStartSync; 0: it does not wait).
	SessionStartSyncMS *int `json:"-"`
	// PromptSyncSeconds is the least time between two background syncs
	// the prompt hook starts ("prompt_sync_seconds"; nil: the default,
	// DefaultPromptSync; 0: none).
	PromptSyncSeconds *int `json:"-"`
	raw               map[string]json.RawMessage
}

// EmbedderConfig is config.json's "embedder": a local or hosted embedding
// server (see package embed).
type EmbedderConfig struct {
	Kind      string `json:"kind"`                  // "ollama" or "openai" (any OpenAI-compatible server)
	URL       string `json:"url"`                   // the server's base URL, e.g. http://127.0.0.1:11434
	Model     string `json:"model"`                 // e.g. nomic-embed-text
	APIKeyEnv string `json:"api_key_env,omitempty"` // environment variable holding a bearer key, if any
	// MinCosine is how close a note must be to a prompt for prompt recall
	// to add it through the vector leg (0: DefaultRecallCosine). Prompt
	// recall adds nothing unless asked to, so it keeps a floor; search
	// has none.
	MinCosine float64 `json:"min_cosine,omitempty"`
	// PromptTimeoutMS bounds the wait for a prompt's embedding in the
	// prompt hook (0: DefaultRecallEmbedTimeout); later, recall is BM25.
	PromptTimeoutMS int `json:"prompt_timeout_ms,omitempty"`
}

// Defaults of the semantic leg in prompt recall: the cosine a note needs
// (nomic-embed-text puts unrelated texts at 0.3 to 0.5, a paraphrase above
// 0.7) and how long a prompt waits for its embedding (a local model
// answers a short text in tens of milliseconds once loaded).
const (
	DefaultRecallCosine       = 0.6
	DefaultRecallEmbedTimeout = 250 * time.Millisecond
)

// DefaultSessionStartSync is how long SessionStart waits for the sync it
// starts, so that what other machines wrote minutes ago is injected
// rather than the stale local index: a sync with a hub on disk or nearby
// takes 60-90 ms, a slow one is left to finish in the background (its
// notes follow at the first prompt). MaxSessionStartSyncMS keeps
// session_start_sync_ms well within the hook's 10 s timeout.
const (
	DefaultSessionStartSync = 400 * time.Millisecond
	MaxSessionStartSyncMS   = 5000
)

// DefaultPromptSync is the least time between two syncs the prompt hook
// starts in the background: with a hub, a note another machine wrote and
// pushed reaches an open session's prompts within about this long plus
// one sync (60-200 ms), while a session of many quick prompts starts one
// sync per interval, not one per prompt.
const DefaultPromptSync = 20 * time.Second

// Defaults of an Ollama embedder given by kind alone (ParseEmbedderSpec).
const (
	DefaultOllamaURL   = "http://127.0.0.1:11434"
	DefaultOllamaModel = "nomic-embed-text"
)

// ParseEmbedderSpec reads the one-line form of an embedder that init
// --embedder and the benchmarks take: KIND[,URL[,MODEL[,API_KEY_ENV]]],
// or "off" (nil). Ollama's URL and model default to a local server and
// nomic-embed-text; an OpenAI-compatible server needs both.
func ParseEmbedderSpec(spec string) (*EmbedderConfig, error) {
	spec = strings.TrimSpace(spec)
	if spec == "off" || spec == "none" {
		return nil, nil
	}
	parts := strings.Split(spec, ",")
	if len(parts) > 4 {
		return nil, fmt.Errorf("embedder %q: want KIND[,URL[,MODEL[,API_KEY_ENV]]]", spec)
	}
	for len(parts) < 4 {
		parts = append(parts, "")
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	e := &EmbedderConfig{Kind: parts[0], URL: parts[1], Model: parts[2], APIKeyEnv: parts[3]}
	if err := e.kindDefaults(); err != nil {
		return nil, fmt.Errorf("embedder %q: %w", spec, err)
	}
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embedder %q: %q is not an http(s) URL", spec, e.URL)
	}
	return e, nil
}

// kindDefaults checks the kind and fills in what it defaults: an Ollama
// server's local URL and model; an OpenAI-compatible server has none.
func (e *EmbedderConfig) kindDefaults() error {
	switch e.Kind {
	case "ollama":
		if e.URL == "" {
			e.URL = DefaultOllamaURL
		}
		if e.Model == "" {
			e.Model = DefaultOllamaModel
		}
		return nil
	case "openai":
		if e.URL == "" || e.Model == "" {
			return errors.New("an OpenAI-compatible server needs its URL and model, e.g. openai,http://127.0.0.1:8080,nomic-embed-text-v1.5")
		}
		return nil
	}
	return errors.New("the kind is ollama or openai (or off)")
}

// LoadConfig reads <home>/config.json. A missing file is an empty config;
// an unreadable or invalid one is an error that names the file, because
// silently ignoring it would sync to the wrong remote.
func LoadConfig(home string) (Config, error) {
	p := filepath.Join(home, ConfigFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read config %s: %w", p, err)
	}
	var c Config
	if err := json.Unmarshal(data, &c.raw); err != nil {
		return Config{}, fmt.Errorf("parse config %s: %w", p, err)
	}
	for _, f := range configFields {
		if v, ok := c.raw[f.key]; ok {
			if err := f.decode(&c, v); err != nil {
				return Config{}, fmt.Errorf("config %s: %w", p, err)
			}
		}
	}
	for key, dst := range map[string]*string{"machine_id": &c.MachineID, "remote": &c.Remote, "tailscale_socket": &c.TailscaleSocket} {
		if v, ok := c.raw[key]; ok {
			var s string
			if err := json.Unmarshal(v, &s); err == nil {
				*dst = strings.TrimSpace(s)
			}
		}
	}
	return c, nil
}

// configFields are config.json's keys with a type or range to check, in
// the order LoadConfig checks them; decode's error says what the value
// must be. Read only.
var configFields = []struct {
	key    string
	decode func(c *Config, v json.RawMessage) error
}{
	{"tailnet_allow_tags", func(c *Config, v json.RawMessage) error {
		if json.Unmarshal(v, &c.AllowTags) != nil {
			return fmt.Errorf("tailnet_allow_tags must be a list of tags such as [\"tag:laptop\"], got %s", v)
		}
		return nil
	}},
	{"recall_decay_days", func(c *Config, v json.RawMessage) error {
		if json.Unmarshal(v, &c.DecayDays) != nil || c.DecayDays < 0 {
			return fmt.Errorf("recall_decay_days must be a number of days >= 0, got %s", v)
		}
		return nil
	}},
	{"native_import", func(c *Config, v json.RawMessage) error {
		var on bool
		if json.Unmarshal(v, &on) != nil {
			return fmt.Errorf("native_import must be true or false, got %s", v)
		}
		c.NativeImportOff = !on
		return nil
	}},
	{"embedder", decodeEmbedder},
	{"session_start_sync_ms", func(c *Config, v json.RawMessage) error {
		var ms int
		if json.Unmarshal(v, &ms) != nil || ms < 0 || ms > MaxSessionStartSyncMS {
			return fmt.Errorf("session_start_sync_ms must be a number of milliseconds from 0 to %d, got %s", MaxSessionStartSyncMS, v)
		}
		c.SessionStartSyncMS = &ms
		return nil
	}},
	{"prompt_sync_seconds", func(c *Config, v json.RawMessage) error {
		var sec int
		if json.Unmarshal(v, &sec) != nil || sec < 0 || sec > 3600 {
			return fmt.Errorf("prompt_sync_seconds must be a number of seconds from 0 to 3600, got %s", v)
		}
		c.PromptSyncSeconds = &sec
		return nil
	}},
	{"native_import_skip", func(c *Config, v json.RawMessage) error {
		if json.Unmarshal(v, &c.NativeImportSkip) != nil {
			return fmt.Errorf("native_import_skip must be a list of project keys such as [\"github.com/me/secret\"], got %s", v)
		}
		return nil
	}},
}

// decodeEmbedder reads config.json's embedder (null: none).
func decodeEmbedder(c *Config, v json.RawMessage) error {
	if string(v) == "null" {
		return nil
	}
	var e EmbedderConfig
	if err := json.Unmarshal(v, &e); err != nil {
		return fmt.Errorf("embedder must be an object like {\"kind\": \"ollama\", \"url\": \"http://127.0.0.1:11434\", \"model\": \"nomic-embed-text\"}, got %s", v)
	}
	if e.MinCosine < 0 || e.MinCosine > 1 {
		return fmt.Errorf("embedder.min_cosine must be between 0 and 1, got %v", e.MinCosine)
	}
	if e.PromptTimeoutMS < 0 {
		return fmt.Errorf("embedder.prompt_timeout_ms must be >= 0, got %d", e.PromptTimeoutMS)
	}
	c.Embedder = &e
	return nil
}

// ResolveHome picks the store home: an explicit value (flag or
// ANAMNESIS_HOME, resolved by the caller) or ~/.anamnesis. A leading ~/ is
// expanded and the result made absolute.
func ResolveHome(explicit string) (string, error) {
	h := explicit
	if h == "" {
		u, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find home directory (set ANAMNESIS_HOME or --home): %w", err)
		}
		h = filepath.Join(u, ".anamnesis")
	} else if h == "~" || strings.HasPrefix(h, "~/") {
		u, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand %s: %w", h, err)
		}
		h = filepath.Join(u, h[1:])
	}
	abs, err := filepath.Abs(h)
	if err != nil {
		return "", fmt.Errorf("resolve home %s: %w", h, err)
	}
	return abs, nil
}

// MaxMachineIDLen bounds a machine id (a host name is at most 253 bytes).
const MaxMachineIDLen = 255

// ValidateMachineID says why id cannot name a machine, or returns nil.
// The id goes into every commit's author line ("anamnesis
// <anamnesis@ID>"): git fsck, and so any hub that checks objects as
// hosted git does, rejects an identity holding '<', '>' or a newline,
// which would make every later push fail. Control characters are refused
// for the same reason and because the id is printed on terminals.
func ValidateMachineID(id string) error {
	switch {
	case id == "":
		return errors.New("is empty")
	case len(id) > MaxMachineIDLen:
		return fmt.Errorf("is %d bytes long; at most %d", len(id), MaxMachineIDLen)
	case !utf8.ValidString(id):
		return errors.New("is not valid UTF-8")
	case strings.TrimSpace(id) != id:
		return errors.New("begins or ends with white space")
	}
	for _, r := range id {
		switch {
		case r == '<' || r == '>':
			return fmt.Errorf("contains %q, which git does not allow in an author identity", r)
		case unicode.IsControl(r):
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

// ResolveMachineID applies the precedence explicit (flag or
// ANAMNESIS_MACHINE_ID) > config.json machine_id > hostname > "unknown".
// An explicit or configured id that git would reject is an error naming
// where it came from (nothing is written with it); a host name is only a
// fallback nobody chose, so it is made valid instead.
func ResolveMachineID(explicit string, cfg Config) (string, error) {
	if s := strings.TrimSpace(explicit); s != "" {
		if err := ValidateMachineID(s); err != nil {
			return "", fmt.Errorf("machine id %q (--machine-id or ANAMNESIS_MACHINE_ID) %w", s, err)
		}
		return s, nil
	}
	if cfg.MachineID != "" {
		if err := ValidateMachineID(cfg.MachineID); err != nil {
			return "", fmt.Errorf("machine id %q (machine_id in %s) %w; edit it or run `anamnesis init --machine-id NAME`", cfg.MachineID, ConfigFile, err)
		}
		return cfg.MachineID, nil
	}
	if h, err := os.Hostname(); err == nil {
		return machineIDFromHostname(h), nil
	}
	return "unknown", nil
}

// machineIDFromHostname turns a host name into a valid machine id:
// characters ValidateMachineID refuses become '-', and the result is
// trimmed to MaxMachineIDLen bytes ("unknown" if nothing is left).
func machineIDFromHostname(h string) string {
	h = strings.TrimSpace(strings.ToValidUTF8(h, "-"))
	h = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || unicode.IsControl(r) {
			return '-'
		}
		return r
	}, h)
	h = strings.TrimSpace(h)
	for len(h) > MaxMachineIDLen {
		_, size := utf8.DecodeLastRuneInString(h)
		h = strings.TrimSpace(h[:len(h)-size])
	}
	if h == "" {
		return "unknown"
	}
	return h
}

// SaveConfig writes <home>/config.json atomically with mode 0600, keeping
// keys this package does not know (the Python tool's reflection block)
// and backing up the previous file once as config.json.bak.
func SaveConfig(home string, c Config) error {
	if c.raw == nil {
		c.raw = map[string]json.RawMessage{}
	}
	for key, v := range map[string]string{"machine_id": c.MachineID, "remote": c.Remote, "tailscale_socket": c.TailscaleSocket} {
		if v == "" {
			delete(c.raw, key)
			continue
		}
		b, _ := json.Marshal(v)
		c.raw[key] = b
	}
	if c.Embedder != nil {
		b, _ := json.Marshal(c.Embedder)
		c.raw["embedder"] = b
	} else {
		delete(c.raw, "embedder")
	}
	data, err := json.MarshalIndent(c.raw, "", "  ")
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	p := filepath.Join(home, ConfigFile)
	// A link as config.json or its backup is refused before anything is
	// read or written: the backup is created only where nothing is
	// (O_EXCL also fails on a dangling link, which os.WriteFile would
	// have followed to create its target).
	for _, f := range []string{p, p + ".bak"} {
		if err := platform.CheckBeneath(home, f); err != nil {
			return err
		}
	}
	if old, err := os.ReadFile(p); err == nil {
		if f, err := os.OpenFile(p+".bak", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			_, werr := f.Write(old)
			if cerr := f.Close(); werr != nil || cerr != nil {
				os.Remove(p + ".bak") // a half backup is worse than none: the next save retries
			}
		}
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", home, err)
	}
	return note.WritePrivateFileAtomicIn(home, p, append(data, '\n'))
}

// Reflection is config.json's "reflection" block as written (nil when
// absent): the model settings, read as the Python tool reads them
// (consolidate.ResolveSettings).
func (c Config) Reflection() json.RawMessage { return c.raw["reflection"] }
