package embed_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/embed"
	"github.com/anamnesis-memory/anamnesis/internal/fakeembed"
)

var ctx = context.Background()

func client(t *testing.T, c embed.Config) *embed.Client {
	t.Helper()
	cl, err := embed.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// Both APIs, in batches, in order, unit length; a paraphrase with no word
// in common lands near its original.
func TestEmbedBothAPIs(t *testing.T) {
	for _, kind := range []string{"ollama", "openai"} {
		srv := fakeembed.Start(t, fakeembed.Options{Model: "m"})
		cl := client(t, embed.Config{Kind: kind, URL: srv.URL + "/", Model: "m", Batch: 32})
		var texts []string
		for i := 0; i < 70; i++ {
			texts = append(texts, strings.Repeat("word ", i%5)+"the automobile needs repair")
		}
		texts[69] = "the quarterly budget meeting"
		vs, err := cl.Embed(ctx, texts)
		if err != nil || len(vs) != 70 {
			t.Fatalf("%s: %d vectors, %v", kind, len(vs), err)
		}
		if n := srv.Requests.Load(); n != 3 {
			t.Errorf("%s: %d requests for 70 texts in batches of 32", kind, n)
		}
		want := fakeembed.Vector(texts[69], 64)
		if c := embed.Cosine(vs[69], want); c < 0.999 {
			t.Errorf("%s: order lost (cosine %.3f with its own text)", kind, c)
		}
		para, err := cl.Embed(ctx, []string{"car fix", "the automobile needs repair", "quarterly budget meeting"})
		if err != nil {
			t.Fatal(err)
		}
		if same, other := embed.Cosine(para[0], para[1]), embed.Cosine(para[0], para[2]); same < 0.5 || other > 0.3 {
			t.Errorf("%s: paraphrase cosine %.2f, unrelated %.2f", kind, same, other)
		}
		if cl.Model() != kind+":m" {
			t.Errorf("model %q", cl.Model())
		}
	}
}

func TestEmbedErrorsAreOneClearLine(t *testing.T) {
	srv := fakeembed.Start(t, fakeembed.Options{Model: "nomic-embed-text"})
	for _, kind := range []string{"ollama", "openai"} {
		_, err := client(t, embed.Config{Kind: kind, URL: srv.URL, Model: "bogus"}).Embed(ctx, []string{"x"})
		if err == nil || !strings.Contains(err.Error(), "bogus") || !strings.Contains(err.Error(), srv.URL) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s wrong model: %v", kind, err)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	if _, err := client(t, embed.Config{Kind: "ollama", URL: dead, Model: "m"}).Embed(ctx, []string{"x"}); err == nil || !strings.Contains(err.Error(), "not answering") {
		t.Errorf("dead server: %v", err)
	}
	slow := fakeembed.Start(t, fakeembed.Options{Delay: 2 * time.Second})
	start := time.Now()
	_, err := client(t, embed.Config{Kind: "ollama", URL: slow.URL, Model: "m", Timeout: 200 * time.Millisecond}).Embed(ctx, []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "did not answer within") || time.Since(start) > time.Second {
		t.Errorf("slow server: %v after %v", err, time.Since(start))
	}
	wrong := fakeembed.Start(t, fakeembed.Options{WrongDim: true})
	if _, err := client(t, embed.Config{Kind: "openai", URL: wrong.URL, Model: "m"}).Embed(ctx, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "dimensions") {
		t.Errorf("wrong dimensions: %v", err)
	}
	for _, bad := range []embed.Config{{Kind: "gpt", URL: "http://x", Model: "m"}, {Kind: "ollama", URL: "x", Model: "m"}, {Kind: "ollama", URL: "http://x"}} {
		if _, err := embed.New(bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func TestEmbedSendsTheKeyFromTheEnvironment(t *testing.T) {
	srv := fakeembed.Start(t, fakeembed.Options{Key: "sk-test"})
	cl := client(t, embed.Config{Kind: "openai", URL: srv.URL, Model: "m", APIKeyEnv: "ANAMNESIS_TEST_EMBED_KEY"})
	if _, err := cl.Embed(ctx, []string{"x"}); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Errorf("without the key: %v", err)
	}
	t.Setenv("ANAMNESIS_TEST_EMBED_KEY", "sk-test")
	if _, err := cl.Embed(ctx, []string{"x"}); err != nil {
		t.Errorf("with the key: %v", err)
	}
}
