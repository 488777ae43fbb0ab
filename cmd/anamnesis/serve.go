package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/anamnesis-memory/anamnesis/tailnet"
	"github.com/urfave/cli/v2"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve this machine's memory read-only to your other machines on the tailnet",
		Description: "Listens on this machine's Tailscale addresses (port 7719; with a userspace-networking\n" +
			"tailscaled, on 127.0.0.1:7719, where tailscaled forwards them) and answers git fetches\n" +
			"(upload-pack only: nobody can push) from nodes of the same tailnet user, or nodes with a tag\n" +
			"listed in config.json \"tailnet_allow_tags\"; everyone else gets 403. Other machines use it\n" +
			"with remote \"tailnet\". Runs in the foreground; see the README for systemd and launchd.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "port", Value: tailnet.DefaultPort, Usage: "port on each Tailscale address"},
			&cli.StringFlag{Name: "listen", Usage: "listen on this address instead (testing); callers are still authorized"},
			&cli.BoolFlag{Name: "allow-loopback", Usage: "with --listen: authorize loopback callers instead of asking tailscaled (testing)"},
			socketFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := portFlag(c); err != nil {
				return err
			}
			s, err := openStore(c, forServer)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.EnsureRepo(c.Context); err != nil {
				return err
			}
			self, auth, addrs, err := serveCallers(c, tailnet.LocalDaemon(s.TailscaleSocket()), s.Config().AllowTags)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
			h := &gitsync.Handler{GitDir: filepath.Join(s.Home(), note.PortableDir, ".git"), Auth: auth, Log: log}
			servers, errs, err := listenAll(c, h, addrs)
			if err != nil {
				return err
			}
			if self.Userspace && c.String("listen") == "" {
				fmt.Fprintf(c.App.Writer, "tailscaled uses userspace networking: it forwards connections to %s port %d here, and still names each caller (WhoIs)\n",
					strings.Join(self.IPs, " "), c.Int("port"))
			}
			select {
			case <-c.Context.Done():
			case err := <-errs:
				if !errors.Is(err, http.ErrServerClosed) {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for _, srv := range servers {
				srv.Shutdown(ctx)
			}
			return nil
		},
	}
}

// serveCallers is who serve answers and where it listens: with
// --allow-loopback (tests, with --listen) loopback callers; else the
// tailnet user's nodes and allowed tags, as tailscaled names them, on
// this machine's Tailscale addresses. --listen replaces the addresses.
func serveCallers(c *cli.Context, d tailnet.Daemon, allowTags []string) (self tailnet.Self, auth gitsync.Authorizer, addrs []string, err error) {
	if c.Bool("allow-loopback") {
		if c.String("listen") == "" {
			return self, nil, nil, usagef("--allow-loopback needs --listen")
		}
		auth = gitsync.LoopbackAuth{}
	} else {
		if self, _, err = tailnet.Status(c.Context, d); err != nil {
			return self, nil, nil, err
		}
		auth = tailnet.WhoIsAuth{D: d, User: self.User, AllowTags: allowTags}
		addrs = self.ListenAddrs(c.Int("port"))
	}
	if l := c.String("listen"); l != "" {
		addrs = []string{l}
	}
	if len(addrs) == 0 {
		return self, nil, nil, errors.New("this machine has no Tailscale address to listen on")
	}
	return self, auth, addrs, nil
}

// listenAll serves h on each of addrs, saying where; errs gets each
// server's end.
func listenAll(c *cli.Context, h http.Handler, addrs []string) (servers []*http.Server, errs chan error, err error) {
	errs = make(chan error, len(addrs))
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return servers, errs, fmt.Errorf("listen on %s: %w", a, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 5 * time.Minute, MaxHeaderBytes: 64 << 10}
		servers = append(servers, srv)
		fmt.Fprintf(c.App.Writer, "serving memory read-only on http://%s/memory\n", ln.Addr())
		go func() { errs <- srv.Serve(ln) }()
	}
	return servers, errs, nil
}
