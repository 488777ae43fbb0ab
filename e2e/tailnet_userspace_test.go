//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// labPeers is what `anamnesis peers --json` prints.
type labPeers struct {
	Self      string `json:"self"`
	Userspace bool   `json:"userspace"`
	Peers     []struct {
		Name        string   `json:"name"`
		Online      bool     `json:"online"`
		SameUser    bool     `json:"same_user"`
		Tags        []string `json:"tags"`
		Serves      bool     `json:"serves_anamnesis"`
		URL         string   `json:"url"`
		Probed      bool     `json:"probed"`
		Unreachable string   `json:"unreachable"`
	} `json:"peers"`
}

// labSync is what `anamnesis sync --json` prints.
type labSync struct {
	Peers []struct {
		URL     string `json:"url"`
		Fetched bool   `json:"fetched"`
		Error   string `json:"error"`
	} `json:"peers"`
	Unreachable []string `json:"unreachable"`
}

// peersOf runs `peers --json` in the node and maps each peer to a short
// summary: "serves URL", "refused" (403), "not probed", or its reason.
func peersOf(t *testing.T, n *labNode) (labPeers, map[string]string) {
	t.Helper()
	var p labPeers
	mustJSON(t, n.anamnesis("peers", "--json"), &p)
	got := map[string]string{}
	for _, x := range p.Peers {
		s := fmt.Sprintf("same_user=%v tags=%v ", x.SameUser, x.Tags)
		switch {
		case !x.Online:
			s += "offline"
		case x.Serves:
			s += "serves " + x.URL
		case !x.Probed:
			s += "not probed"
		case strings.HasPrefix(x.Unreachable, "refuses this machine (403"):
			s += "refused"
		default:
			s += "unreachable: " + x.Unreachable
		}
		got[x.Name] = s
	}
	return p, got
}

// TestTailnetLabUserspace runs anamnesis on a real tailnet where most
// machines use a userspace-networking tailscaled (containers, rootless
// installs): uno and dos (userspace; dos's tailscaled has its socket
// somewhere else) and tres (TUN) are one user's machines; xray (TUN) is
// another user's; tango (userspace) carries tag:ci.
func TestTailnetLabUserspace(t *testing.T) {
	begin := time.Now()
	l := newLab(t,
		nodeSpec{name: "uno", user: "alice", mode: userspaceMode},
		nodeSpec{name: "dos", user: "alice", mode: userspaceMode, ownSocket: true},
		nodeSpec{name: "tres", user: "alice", mode: tunMode},
		nodeSpec{name: "xray", user: "bob", mode: tunMode},
		nodeSpec{name: "tango", user: "alice", mode: userspaceMode, tags: []string{"tag:ci"}},
	)
	uno, dos, tres, xray, tango := l.node("uno"), l.node("dos"), l.node("tres"), l.node("xray"), l.node("tango")
	scenario := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			l.dumpLogs()
		}
	})
	url := func(n *labNode) string { return "http://" + n.ip4() + ":7719/memory" }
	refs := func(n *labNode) string { return url(n) + "/info/refs?service=git-upload-pack" }

	// Stores: the three machines and xray sync with remote tailnet;
	// tango, tagged, names uno and tres. dos is set up without the
	// socket variable, so its config does not record the socket: every
	// later command finds tailscaled through the variable alone.
	for _, n := range []*labNode{uno, tres, xray} {
		n.anamnesis("init", "--yes", "--remote", "tailnet", "--no-claude", "--no-mcp", "--no-sync")
	}
	if out, errs, err := dos.run(time.Minute, "", "env", "-u", "ANAMNESIS_TAILSCALE_SOCKET", l.anamnesis,
		"init", "--yes", "--remote", "tailnet", "--no-claude", "--no-mcp", "--no-sync"); err != nil {
		t.Fatalf("dos: init: %v\n%s%s", err, out, errs)
	}
	if cfg, _ := os.ReadFile(filepath.Join(dos.home, ".anamnesis", "config.json")); bytes.Contains(cfg, []byte("tailscale_socket")) {
		t.Fatalf("dos: init without the variable recorded a socket:\n%s", cfg)
	}
	tango.anamnesis("init", "--yes", "--remote", "peers:"+url(uno)+","+url(tres), "--no-claude", "--no-mcp", "--no-sync")

	// --- The socket setting (dos's tailscaled listens on its own --socket).
	// Without the variable anamnesis looks at the system's socket, which
	// does not exist in dos, and says so; with it (the node's
	// environment), or with --tailscale-socket, it finds tailscaled.
	if _, errs, err := dos.run(time.Minute, "", "env", "-u", "ANAMNESIS_TAILSCALE_SOCKET", l.anamnesis, "peers"); err == nil ||
		!strings.Contains(errs, "tailscaled is not running or its socket is unreachable") || !strings.Contains(errs, "/var/run/tailscale/tailscaled.sock") {
		t.Errorf("dos: peers without ANAMNESIS_TAILSCALE_SOCKET: want a failure naming the default socket, got %v: %s", err, errs)
	}
	if out, errs, err := dos.run(time.Minute, "", "env", "-u", "ANAMNESIS_TAILSCALE_SOCKET", l.anamnesis,
		"--tailscale-socket", dos.socket, "peers"); err != nil || !strings.HasPrefix(out, "this machine: dos ") {
		t.Errorf("dos: peers --tailscale-socket %s: %v\n%s%s", dos.socket, err, out, errs)
	}
	var st struct {
		Sync struct {
			Tailnet string `json:"tailnet"`
		} `json:"sync"`
	}
	mustJSON(t, dos.anamnesis("status", "--json"), &st)
	if want := "running as dos (" + dos.ip4(); !strings.HasPrefix(st.Sync.Tailnet, want) || !strings.Contains(st.Sync.Tailnet, "userspace networking") {
		t.Errorf("dos: status with ANAMNESIS_TAILSCALE_SOCKET: tailnet %q, want %q... with userspace networking", st.Sync.Tailnet, want)
	}

	// Each of the user's machines writes a note. Nobody serves yet: each
	// sync commits it and exits 1 naming the machines it asked.
	ids := map[string]string{}
	for _, n := range []*labNode{uno, dos, tres} {
		ids[n.spec.name] = strings.TrimSpace(n.anamnesis("write", "--type", "semantic", "--title", "note from "+n.spec.name,
			"--body", "written on "+n.spec.name))
		if msg := n.anamnesisFails("sync"); !strings.Contains(msg, "peers probed, none reachable: ") {
			t.Errorf("%s: first sync, nobody serving: got %q, want \"N peers probed, none reachable\"", n.spec.name, msg)
		}
	}

	// --- serve on a userspace node listens on 127.0.0.1 (the Tailscale
	// address exists only inside tailscaled, which forwards to it).
	unoServe := uno.serve()
	// serve prints the mode line just after it listens (bounded wait).
	var log []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if log, _ = os.ReadFile(filepath.Join(uno.dir, "serve.log")); bytes.Contains(log, []byte("tailscaled uses userspace networking")) {
			break
		}
	}
	if !bytes.Contains(log, []byte("serving memory read-only on http://127.0.0.1:7719/memory\n")) ||
		!bytes.Contains(log, []byte("tailscaled uses userspace networking: it forwards connections to "+uno.ip4())) {
		t.Errorf("uno: serve in userspace mode does not say it listens on 127.0.0.1:7719 for %s:\n%s", uno.ip4(), log)
	}
	dosServe := dos.serve() // finds its tailscaled through the variable
	tresServe := tres.serve()

	// --- The authorization matrix on uno's endpoint, for connections
	// tailscaled forwards to 127.0.0.1: the user's machines (tres by its
	// kernel, dos through its tailscaled's SOCKS5 proxy) read; another
	// user's machine and a tagged node uno does not allow get 403;
	// nobody pushes.
	matrix := func(allowed map[string]bool) {
		t.Helper()
		for _, n := range []*labNode{dos, tres, xray, tango} {
			wantCode := "403"
			if allowed[n.spec.name] {
				wantCode = "200"
			}
			if code := n.tailnetCode("GET", refs(uno), "", ""); code != wantCode {
				t.Errorf("%s (%s) → uno upload-pack advertisement: %s, want %s", n.spec.name, n.spec.mode, code, wantCode)
			}
			if code := n.tailnetCode("GET", url(uno)+"/info/refs?service=git-receive-pack", "", ""); code != "403" {
				t.Errorf("%s → uno receive-pack advertisement: %s, want 403", n.spec.name, code)
			}
			if code := n.tailnetCode("POST", url(uno)+"/git-receive-pack", "application/x-git-receive-pack-request", "0000"); code != "403" {
				t.Errorf("%s → uno git-receive-pack: %s, want 403", n.spec.name, code)
			}
		}
	}
	matrix(map[string]bool{"dos": true, "tres": true})
	// A program on uno itself calls 127.0.0.1:7719 directly: tailscaled
	// did not forward it, cannot name it, and it is refused.
	if code := uno.httpCode("GET", "http://127.0.0.1:7719/memory/info/refs?service=git-upload-pack", "", ""); code != "403" {
		t.Errorf("uno → its own 127.0.0.1:7719 (not through tailscaled): %s, want 403", code)
	}
	// tailscaled named every tailnet caller (WhoIs of the forwarded
	// connection answered; each came from 127.0.0.1): the readers' pushes
	// are logged under their names, and the refusals are decisions about
	// who the callers are. Only the local caller is unknown.
	unoLog, _ := os.ReadFile(filepath.Join(uno.dir, "serve.log"))
	for _, who := range []string{`msg="push refused" remote=127.0.0.1:`, `who="dos (user-`, `who="tres (user-`,
		"reason=\"not allowed to read this memory: xray (user-", "reason=\"not allowed to read this memory: tango (user-"} {
		if !bytes.Contains(unoLog, []byte(who)) {
			t.Errorf("uno's serve log lacks %s:\n%s", who, tail(unoLog, 3000))
		}
	}
	if n := bytes.Count(unoLog, []byte("is not a known tailnet node")); n != 1 {
		t.Errorf("uno's serve log: %d callers unknown to WhoIs, want 1 (the local caller; every forwarded one is named):\n%s", n, tail(unoLog, 3000))
	}
	// git itself clones from the userspace node over the tailnet, and
	// cannot push there.
	dir := filepath.Join(tres.home, "clone-of-uno")
	if out, errs, err := tres.run(time.Minute, "", "git", "clone", "--quiet", url(uno), dir); err != nil {
		t.Errorf("tres: git clone of uno: %v\n%s%s", err, out, errs)
	} else if out, errs, err := tres.run(time.Minute, "", "git", "-C", dir, "push", "origin", "HEAD:refs/heads/intruder"); err == nil || !strings.Contains(out+errs, "403") {
		t.Errorf("tres: git push to uno: want a 403 refusal, got %v\n%s%s", err, out, errs)
	}

	// --- peers on a userspace node asks through tailscaled: it finds dos
	// (userspace) and tres (TUN) serving, and does not ask xray (another
	// user). testcontrol keeps tagged tango in alice's user, so it shows
	// as same_user and is asked (nothing listens there); real Tailscale
	// shows a tagged node as another user's.
	closed := "connection refused: nothing listens on port 7719 (is `anamnesis serve` running there?)"
	self, got := peersOf(t, uno)
	want := map[string]string{
		"dos":   "same_user=true tags=[] serves " + url(dos),
		"tres":  "same_user=true tags=[] serves " + url(tres),
		"xray":  "same_user=false tags=[] not probed",
		"tango": "same_user=true tags=[tag:ci] unreachable: " + closed,
	}
	if self.Self != "uno" || !self.Userspace || !mapsEqual(got, want) {
		t.Errorf("peers on uno:\n got self=%s userspace=%v %v\nwant self=uno userspace=true %v", self.Self, self.Userspace, got, want)
	}
	// And a TUN machine reaches the userspace ones by its kernel.
	_, got = peersOf(t, tres)
	if got["uno"] != "same_user=true tags=[] serves "+url(uno) || got["dos"] != "same_user=true tags=[] serves "+url(dos) {
		t.Errorf("peers on tres: uno %q, dos %q; want both serving", got["uno"], got["dos"])
	}

	// --- sync --remote tailnet on a userspace node fetches from the
	// userspace and the TUN machine, then the three converge.
	var rep labSync
	syncStart := time.Now()
	mustJSON(t, uno.anamnesis("sync", "--json"), &rep)
	t.Logf("uno: sync with remote tailnet (userspace) took %v", time.Since(syncStart).Round(time.Millisecond))
	var fetched []string
	for _, p := range rep.Peers {
		if !p.Fetched || p.Error != "" {
			t.Errorf("uno's sync: peer %s fetched=%v error=%q", p.URL, p.Fetched, p.Error)
		}
		fetched = append(fetched, p.URL)
	}
	slices.Sort(fetched)
	wantF := []string{url(dos), url(tres)}
	slices.Sort(wantF)
	// tango is asked too (testcontrol's same user) and refuses: it
	// serves nothing, which the report names.
	if !slices.Equal(fetched, wantF) || len(rep.Unreachable) != 1 || !strings.HasPrefix(rep.Unreachable[0], "tango (") {
		t.Errorf("uno's sync fetched from %v, unreachable %v; want %v and tango", fetched, rep.Unreachable, wantF)
	}
	converge(t, []*labNode{uno, dos, tres}, ids)

	// --- A tagged userspace node syncs with peers: URLs (uno and tres),
	// dialled through its tailscaled. Neither allows tag:ci yet: both
	// refuse, and the sync says so and exits 1.
	tango.anamnesis("write", "--type", "semantic", "--title", "note from tango", "--body", "written on tango")
	if msg := tango.anamnesisFails("sync"); !strings.Contains(msg, "mesh sync: 2 peers probed, none reachable: ") ||
		strings.Count(msg, "403") < 2 || !strings.Contains(msg, url(uno)) || !strings.Contains(msg, url(tres)) {
		t.Errorf("tango: sync with peers: URLs, tag:ci allowed nowhere: got %q, want both peers named as refusing (403)", msg)
	}
	// uno allows tag:ci and restarts serve: tango reads uno (and with it
	// everything uno merged from dos and tres: one memory), tres still
	// refuses and is named in the report; pushes stay refused.
	setConfig(t, uno, "tailnet_allow_tags", []string{"tag:ci"})
	unoServe.stop()
	uno.serve()
	matrix(map[string]bool{"dos": true, "tres": true, "tango": true})
	rep = labSync{}
	mustJSON(t, tango.anamnesis("sync", "--json"), &rep)
	var okFrom, refusedBy []string
	for _, p := range rep.Peers {
		if p.Error == "" && p.Fetched {
			okFrom = append(okFrom, p.URL)
		} else if strings.Contains(p.Error, "403") {
			refusedBy = append(refusedBy, p.URL)
		}
	}
	if !slices.Equal(okFrom, []string{url(uno)}) || !slices.Equal(refusedBy, []string{url(tres)}) {
		t.Errorf("tango's sync with uno allowing tag:ci: fetched from %v, refused by %v; want %s and %s (report %+v)", okFrom, refusedBy, url(uno), url(tres), rep)
	}
	// From tango's side, testcontrol shows the user's machines as its
	// own user's (with real Tailscale they are another user's, and
	// remote tailnet would ask none of them: hence peers: URLs). Asked
	// through its tailscaled, uno serves it and the others refuse it.
	_, got = peersOf(t, tango)
	want = map[string]string{
		"uno":  "same_user=true tags=[] serves " + url(uno),
		"dos":  "same_user=true tags=[] refused",
		"tres": "same_user=true tags=[] refused",
		"xray": "same_user=false tags=[] not probed",
	}
	if !mapsEqual(got, want) {
		t.Errorf("peers on tango (tag:ci allowed on uno only):\n got %v\nwant %v", got, want)
	}
	have := noteIDs(t, tango)
	for who, id := range ids {
		if !have[id] {
			t.Errorf("tango (tag:ci allowed on uno only) lacks %s's note %s: an allowed tag reads the whole memory", who, id)
		}
	}

	// --- A sync whose peers all stopped serving: exit 1, one line naming
	// each machine asked and why (the port is closed: tailscaled's dial
	// is refused, for the userspace peer and the TUN peer alike).
	dosServe.stop()
	tresServe.stop()
	msg := uno.anamnesisFails("sync")
	t.Logf("uno: sync with every peer's serve stopped: %s", msg)
	for _, want := range []string{
		"mesh sync: 3 peers probed, none reachable: ",
		"dos (" + dos.ip4() + "): " + closed,
		"tres (" + tres.ip4() + "): " + closed,
		"tango (" + tango.ip4() + "): " + closed,
		"; local notes are committed",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("uno: sync with every peer's serve stopped:\n got %q\nwant it to contain %q", msg, want)
		}
	}
	t.Logf("tailnet lab (userspace): scenario %v, whole test %v", time.Since(scenario).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}
