package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/tailnet"
	"github.com/urfave/cli/v2"
)

// socketFlag() is the global --tailscale-socket, also accepted after serve
// and peers (where it was first).
func socketFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: tailscaleSocketFlag, Usage: "tailscaled's socket (default: ANAMNESIS_TAILSCALE_SOCKET, config.json tailscale_socket, else the system's)"}
}

func peersCommand() *cli.Command {
	return &cli.Command{
		Name:  "peers",
		Usage: "list the tailnet's machines and which of them serve anamnesis",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "port", Value: tailnet.DefaultPort, Usage: "port anamnesis serve listens on"},
			socketFlag(), jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := portFlag(c); err != nil {
				return err
			}
			var allow []string
			var last map[string]string
			socket := tailscaleSocketOption(c)
			if s, err := openStore(c, forCommand); err == nil {
				allow = s.Config().AllowTags
				last, _ = s.LastCommits(c.Context) // a peers listing without them is still useful
				socket = s.TailscaleSocket()
				s.Close()
			}
			d := tailnet.LocalDaemon(socket)
			ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
			defer cancel()
			self, peers, err := tailnet.Status(ctx, d)
			if err != nil {
				return cli.Exit(err.Error(), 1)
			}
			tailnet.Probe(ctx, peers, tailnet.ProbeOptions{Port: c.Int("port"), Timeout: 2 * time.Second, AllowTags: allow, Dial: self.Dial(d)})
			type row struct {
				tailnet.Peer
				LastCommit string `json:"last_commit,omitempty"`
			}
			var rows []row
			for _, p := range peers {
				rows = append(rows, row{p, last[p.Name]})
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, map[string]any{"self": self.Name, "ips": self.IPs, "userspace": self.Userspace, "peers": rows})
			}
			w := c.App.Writer
			mode := ""
			if self.Userspace {
				mode = " (userspace networking: peers are reached through tailscaled)"
			}
			fmt.Fprintf(w, "this machine: %s %s%s\n", self.Name, strings.Join(self.IPs, " "), mode)
			for _, r := range rows {
				state := "offline"
				if r.Online {
					state = "online"
				}
				who := "other user"
				if r.SameUser {
					who = "yours"
				}
				serves := ""
				switch {
				case r.Serves:
					serves = "  serves anamnesis at " + r.URL
				case r.Reason != "":
					serves = "  not reachable: " + r.Reason
				}
				lc := ""
				if r.LastCommit != "" {
					lc = "  last commit " + r.LastCommit
				}
				fmt.Fprintf(w, "%-20s %-8s %-8s %-10s %s%s%s\n", r.Name, r.OS, state, who, strings.Join(r.Tags, ","), serves, lc)
			}
			return nil
		},
	}
}
