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
			log := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
			d := tailnet.LocalDaemon(s.TailscaleSocket())
			var auth gitsync.Authorizer
			var self tailnet.Self
			var addrs []string
			if c.Bool("allow-loopback") {
				if c.String("listen") == "" {
					return usagef("--allow-loopback needs --listen")
				}
				auth = gitsync.LoopbackAuth{}
			} else {
				self, _, err = tailnet.Status(c.Context, d)
				if err != nil {
					return err
				}
				auth = tailnet.WhoIsAuth{D: d, User: self.User, AllowTags: s.Config().AllowTags}
				addrs = self.ListenAddrs(c.Int("port"))
			}
			if l := c.String("listen"); l != "" {
				addrs = []string{l}
			}
			if len(addrs) == 0 {
				return errors.New("this machine has no Tailscale address to listen on")
			}
			h := &gitsync.Handler{GitDir: filepath.Join(s.Home(), note.PortableDir, ".git"), Auth: auth, Log: log}
			errs := make(chan error, len(addrs))
			var servers []*http.Server
			for _, a := range addrs {
				ln, err := net.Listen("tcp", a)
				if err != nil {
					return fmt.Errorf("listen on %s: %w", a, err)
				}
				srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
					WriteTimeout: 5 * time.Minute, MaxHeaderBytes: 64 << 10}
				servers = append(servers, srv)
				fmt.Fprintf(c.App.Writer, "serving memory read-only on http://%s/memory\n", ln.Addr())
				go func() { errs <- srv.Serve(ln) }()
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
