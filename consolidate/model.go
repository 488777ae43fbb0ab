package consolidate

import (
	"context"
	"errors"
)

// Request is one call to a model: the system prompt, the (already
// redacted) user content, and a JSON schema the reply should follow where
// the backend can enforce one.
type Request struct {
	System string
	User   string
	Schema string
}

// Reply is a model's answer. CostUSD is what the backend reported the call
// cost (0 when it reports nothing).
type Reply struct {
	Text    string
	CostUSD float64
}

// Model is what the planner needs of a model backend.
type Model interface {
	// Name labels notes and commits ("claude-code/sonnet", "deepseek/deepseek-chat").
	Name() string
	Complete(ctx context.Context, req Request) (Reply, error)
}

// ErrRefused is a reply the model declined to give, or one without content.
var ErrRefused = errors.New("the model gave no usable reply")
