package consolidate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// OpenAI is any OpenAI-compatible chat completions endpoint, called as the
// Python tool calls it (inventory §6.5): POST base_url/chat/completions,
// a system and a user message, temperature 0.2, no streaming.
type OpenAI struct {
	Provider string // label only: openai, deepseek, local
	Model    string
	BaseURL  string
	APIKey   string
	Timeout  time.Duration // 0: 30 s
	Client   *http.Client  // nil: a client of its own
}

func (o OpenAI) Name() string { return o.Provider + "/" + o.Model }

func (o OpenAI) Complete(ctx context.Context, req Request) (Reply, error) {
	body, err := json.Marshal(map[string]any{
		"model": o.Model,
		"messages": []map[string]string{
			{"role": "system", "content": req.System},
			{"role": "user", "content": req.User},
		},
		"temperature": 0.2,
		"stream":      false,
	})
	if err != nil {
		return Reply{}, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := strings.TrimRight(o.BaseURL, "/") + "/chat/completions"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, fmt.Errorf("%s: %w", o.Name(), err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+o.APIKey)
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(hr)
	if err != nil {
		return Reply{}, fmt.Errorf("%s at %s: %w", o.Name(), o.BaseURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return Reply{}, fmt.Errorf("%s: read reply: %w", o.Name(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return Reply{}, fmt.Errorf("%s: HTTP %d: %s", o.Name(), resp.StatusCode, firstLineOf(string(data)))
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal string  `json:"refusal"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return Reply{}, fmt.Errorf("%s: reply is not JSON: %w", o.Name(), err)
	}
	if len(out.Choices) == 0 {
		return Reply{}, fmt.Errorf("%s: no choices: %w", o.Name(), ErrRefused)
	}
	m := out.Choices[0].Message
	if m.Refusal != "" || m.Content == nil || strings.TrimSpace(*m.Content) == "" {
		return Reply{}, fmt.Errorf("%s: refused (%s): %w", o.Name(), firstLineOf(m.Refusal+" "+out.Choices[0].FinishReason), ErrRefused)
	}
	return Reply{Text: *m.Content}, nil
}
