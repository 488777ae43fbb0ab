package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/tailnet"
	"github.com/anamnesis-memory/anamnesis/webui"
	"github.com/urfave/cli/v2"
)

func uiCommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "browse, search and edit your memory in a local web page",
		Description: "Serves a web interface to this store on 127.0.0.1 (a free port unless --port) and prints its\n" +
			"address, which carries a one-time secret: open that address, not the bare port. Pages: the notes\n" +
			"(filters, search with the same ranking as `anamnesis search`), each note with its git history,\n" +
			"edit, write and supersede (committed, and synced in the background when a remote is set),\n" +
			"conflicts (keep a version or merge by hand) and the fleet (machines, remote, tailnet peers,\n" +
			"index, doctor). Only this machine can connect; requests must name 127.0.0.1, localhost or\n" +
			"[::1] with the port. Runs in the foreground until interrupted.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "port", Usage: "port on 127.0.0.1 (default: a free one)"},
			&cli.BoolFlag{Name: "open", Usage: "open the address in the default browser"},
			&cli.BoolFlag{Name: "json", Usage: "print {\"url\": ...} as JSON instead of a sentence"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("ui takes no arguments")
			}
			port := c.Int("port")
			if c.IsSet("port") && (port < 1 || port > 65535) {
				return usagef("--port must be between 1 and 65535, got %d", port)
			}
			s, err := openStore(c, forServer)
			if err != nil {
				return err
			}
			defer s.Close()
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
			}
			defer ln.Close()
			ctx, cancel := context.WithCancel(c.Context)
			defer cancel()
			inst, err := installFor(envOf(c))
			if err != nil {
				inst.Problem = err.Error()
			}
			opts := webui.Options{Addr: ln.Addr().String(), Install: inst, Tailnet: uiTailnet(s)}
			if s.Remote() != "" {
				// As after an MCP write: a burst of edits goes out in one
				// background sync, and the page never waits for the network.
				soon := newDebouncer(mcpSyncDelay, func() { spawnSync(c, s) })
				defer soon.flush()
				opts.AfterWrite, opts.SyncConfigured = soon.poke, true
			}
			h, err := webui.New(ctx, s, opts)
			if err != nil {
				return err
			}
			if err := announceUI(c, s.Home(), h.URL()); err != nil {
				return err
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
				WriteTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
			return serveUI(c.Context, srv, ln)
		},
	}
}

// announceUI prints the UI's address (as JSON with --json) and with
// --open hands it to the browser.
func announceUI(c *cli.Context, home, url string) error {
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, map[string]string{"url": url}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.App.Writer, "anamnesis ui for %s at\n  %s\nStop it with Ctrl-C.\n", home, url)
	}
	if c.Bool("open") {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "anamnesis: could not open a browser (%v); open the address above\n", err)
		}
	}
	return nil
}

// serveUI serves on ln until ctx ends (an interrupt) or the server
// fails, then shuts down, giving requests under way 5 s.
func serveUI(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errs:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("web UI: %w", err)
		}
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	return srv.Shutdown(sctx)
}

// uiTailnet is the fleet page's view of the tailnet: tailscaled's peers,
// each probed for an anamnesis server as `anamnesis peers` does.
func uiTailnet(s *anamnesis.Store) func(ctx context.Context) (webui.Tailnet, error) {
	return func(ctx context.Context) (webui.Tailnet, error) {
		d := tailnet.LocalDaemon(s.TailscaleSocket())
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out := webui.Tailnet{Summary: tailnet.Summarize(ctx, s.TailscaleSocket()).String()}
		self, peers, err := tailnet.Status(ctx, d)
		if err != nil {
			return out, err
		}
		out.Self = self.Name
		tailnet.Probe(ctx, peers, tailnet.ProbeOptions{Port: tailnet.DefaultPort, Timeout: 2 * time.Second,
			AllowTags: s.Config().AllowTags, Dial: self.Dial(d)})
		for _, p := range peers {
			out.Peers = append(out.Peers, webui.Peer{Name: p.Name, OS: p.OS, Online: p.Online, SameUser: p.SameUser,
				Tags: p.Tags, Serves: p.Serves, URL: p.URL, Reason: p.Reason})
		}
		return out, nil
	}
}

// openBrowser hands url to the desktop's opener.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; its exit says nothing about the browser
	return nil
}
