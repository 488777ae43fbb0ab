package consolidate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
)

// HooksOffEnv, set to 1, makes anamnesis's Claude Code hooks do nothing.
// The Claude backend sets it for the CLI it runs, besides --safe-mode, so
// a consolidation run never injects memory into its own request or
// captures itself as a session, even with a CLI older than --safe-mode.
const HooksOffEnv = "ANAMNESIS_HOOKS_OFF"

// Claude is the Claude Code CLI the user is logged in to, run as a plain
// model: print mode, no tools, no MCP servers but none, no session kept,
// hooks off, the spend of one call capped.
type Claude struct {
	// Path is the executable ("" finds claude on PATH).
	Path string
	// Model is passed as --model when set (an alias or a full name).
	Model string
	// MaxBudgetUSD caps one call (--max-budget-usd); 0 leaves it out.
	MaxBudgetUSD float64
	// Env is the environment of the CLI (nil: this process's); HooksOffEnv
	// is added to it.
	Env []string
}

func (c Claude) Name() string {
	if c.Model != "" {
		return "claude-code/" + c.Model
	}
	return "claude-code"
}

// Args is the command line of one call (without the executable). The
// content goes on stdin: a long one would pass the kernel's limit on one
// argument (128 KiB on Linux).
func (c Claude) Args(req Request) []string {
	args := []string{"-p", "--safe-mode", "--tools", "", "--strict-mcp-config",
		"--no-session-persistence", "--output-format", "json"}
	if req.System != "" {
		args = append(args, "--system-prompt", req.System)
	}
	if req.Schema != "" {
		args = append(args, "--json-schema", req.Schema)
	}
	if c.MaxBudgetUSD > 0 {
		args = append(args, "--max-budget-usd", strconv.FormatFloat(c.MaxBudgetUSD, 'f', -1, 64))
	}
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	return args
}

// claudeResult is the part of `--output-format json`'s result we read.
type claudeResult struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	IsError          bool            `json:"is_error"`
	Result           string          `json:"result"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	TotalCostUSD     float64         `json:"total_cost_usd"`
	StopReason       string          `json:"stop_reason"`
}

func (c Claude) Complete(ctx context.Context, req Request) (Reply, error) {
	path := c.Path
	if path == "" {
		p, err := exec.LookPath("claude")
		if err != nil {
			return Reply{}, fmt.Errorf("find the Claude Code CLI: %w", err)
		}
		path = p
	}
	cmd := exec.CommandContext(ctx, path, c.Args(req)...)
	env := c.Env
	if env == nil {
		env = os.Environ() // the CLI needs the user's login: HOME, ANTHROPIC_*, CLAUDE_CONFIG_DIR
	}
	cmd.Env = append(slices.Clone(env), HooksOffEnv+"=1")
	cmd.Stdin = strings.NewReader(req.User)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res claudeResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		if runErr != nil {
			return Reply{}, fmt.Errorf("claude -p: %w: %s", runErr, firstLineOf(stderr.String()))
		}
		return Reply{}, fmt.Errorf("claude -p: reply is not JSON: %w", err)
	}
	reply := Reply{CostUSD: res.TotalCostUSD}
	if res.IsError || runErr != nil || (res.Subtype != "" && res.Subtype != "success") {
		why := res.Subtype
		if why == "" || why == "success" {
			why = firstLineOf(res.Result)
		}
		return reply, fmt.Errorf("claude -p failed (%s): %w", why, ErrRefused)
	}
	if len(res.StructuredOutput) > 0 && string(res.StructuredOutput) != "null" {
		reply.Text = string(res.StructuredOutput)
	} else {
		reply.Text = res.Result
	}
	if strings.TrimSpace(reply.Text) == "" {
		return reply, fmt.Errorf("claude -p: empty reply (stop reason %q): %w", res.StopReason, ErrRefused)
	}
	return reply, nil
}

// firstLineOf is s's first line, clipped (textfmt.Clip) to 200 runes for
// an error message.
func firstLineOf(s string) string {
	return textfmt.Clip(textfmt.FirstLine(s), 200)
}
