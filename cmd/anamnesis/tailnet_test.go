package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tailscale.com/client/tailscale/apitype"
	"tailscale.com/ipn/ipnstate"
	"tailscale.com/tailcfg"
	"tailscale.com/types/key"
)

// tailnetSim stands in for the tailnet between stand-in tailscaleds: what
// each node's tailscaled forwards incoming connections to, and who opened
// each forwarded connection (as tailscaled's netstack registers it, so
// WhoIs of the forwarded connection names the real caller).
type tailnetSim struct {
	mu       sync.Mutex
	forwards map[string]string // "100.64.0.1:7719" -> "127.0.0.1:PORT"
	callers  map[string]*fakeNode
}

// fakeNode is one node's tailscaled in userspace-networking mode,
// answering the LocalAPI calls anamnesis makes (status, whois, dial) on
// a Unix socket, as the real one does.
type fakeNode struct {
	net     *tailnetSim
	name    string
	user    tailcfg.UserID
	ip      string
	socket  string
	peers   []*fakeNode
	tun     bool
	offline bool
}

func newTailnetSim() *tailnetSim {
	return &tailnetSim{forwards: map[string]string{}, callers: map[string]*fakeNode{}}
}

func (n *tailnetSim) node(t *testing.T, name string, user tailcfg.UserID, ip string) *fakeNode {
	t.Helper()
	// Unix socket paths are short (108 bytes): not under t.TempDir().
	dir, err := os.MkdirTemp("", "tsd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakeNode{net: n, name: name, user: user, ip: ip, socket: filepath.Join(dir, "tailscaled.sock")}
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return f
}

func (f *fakeNode) peerStatus() *ipnstate.PeerStatus {
	return &ipnstate.PeerStatus{HostName: f.name, DNSName: f.name + ".tail.example.", OS: "linux", UserID: f.user, Online: !f.offline,
		TailscaleIPs: []netip.Addr{netip.MustParseAddr(f.ip)}}
}

func (f *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/localapi/v0/status":
		// The test changes peers and their state between commands; the
		// lock orders those writes before this read (-race).
		f.net.mu.Lock()
		st := &ipnstate.Status{BackendState: "Running", TUN: f.tun, Self: f.peerStatus(),
			TailscaleIPs: []netip.Addr{netip.MustParseAddr(f.ip)}, Peer: map[key.NodePublic]*ipnstate.PeerStatus{}}
		for _, p := range f.peers {
			st.Peer[key.NewNode().Public()] = p.peerStatus()
		}
		f.net.mu.Unlock()
		json.NewEncoder(w).Encode(st)
	case "/localapi/v0/whois":
		f.net.mu.Lock()
		who := f.net.callers[r.URL.Query().Get("addr")]
		f.net.mu.Unlock()
		if who == nil {
			http.Error(w, "no match for IP:port", http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(&apitype.WhoIsResponse{
			Node:        &tailcfg.Node{Name: who.name + ".tail.example.", ComputedName: who.name},
			UserProfile: &tailcfg.UserProfile{ID: who.user, LoginName: fmt.Sprintf("user%d@example.com", who.user)}})
	case "/localapi/v0/dial":
		f.dial(w, r)
	default:
		http.NotFound(w, r)
	}
}

// dial opens a connection for the caller to a tailnet address: to where
// that node's tailscaled forwards it, recording this node as the caller.
func (f *fakeNode) dial(w http.ResponseWriter, r *http.Request) {
	addr := net.JoinHostPort(r.Header.Get("Dial-Host"), r.Header.Get("Dial-Port"))
	f.net.mu.Lock()
	to, ok := f.net.forwards[addr]
	f.net.mu.Unlock()
	if !ok {
		http.Error(w, "no route to "+addr, http.StatusBadGateway)
		return
	}
	back, err := net.Dial("tcp", to)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	f.net.mu.Lock()
	f.net.callers[back.LocalAddr().String()] = f
	f.net.mu.Unlock()
	conn, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		back.Close()
		return
	}
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: ts-dial\r\nConnection: upgrade\r\n\r\n")
	rw.Flush()
	go func() { io.Copy(back, rw); back.(*net.TCPConn).CloseWrite() }()
	io.Copy(conn, back)
	conn.Close()
	back.Close()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServe runs `anamnesis serve` in the background until the test ends
// (or stop is called) and returns the first line it prints.
func startServe(t *testing.T, env []string, args ...string) (line string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stop = func() {
		cancel()
		<-done
	}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		cmd.Wait()
		close(lines)
		close(done)
	}()
	t.Cleanup(stop)
	select {
	case l, ok := <-lines:
		if !ok {
			<-done
			t.Fatalf("serve exited: %s", stderr.String())
		}
		return l, stop
	case <-time.After(20 * time.Second):
		t.Fatalf("serve printed nothing in 20 s: %s", stderr.String())
	}
	return "", stop
}

// TestUserspaceTailnetServeAndSync: with tailscaled in userspace
// networking (no TUN: a container, a rootless install), the Tailscale
// address exists only inside tailscaled. serve listens on 127.0.0.1,
// where tailscaled forwards tailnet connections, and still authorizes
// each caller by WhoIs; peers and sync reach the other machine through
// tailscaled. Each machine names its tailscaled's socket another way:
// the global flag, the environment, config.json.
func TestUserspaceTailnetServeAndSync(t *testing.T) {
	tn := newTailnetSim()
	a := tn.node(t, "desk", 1, "100.64.0.1")
	b := tn.node(t, "laptop", 1, "100.64.0.2")
	port := freePort(t)
	tn.mu.Lock()
	a.peers, b.peers = []*fakeNode{b}, []*fakeNode{a}
	tn.forwards["100.64.0.1:7719"] = fmt.Sprintf("127.0.0.1:%d", port)
	tn.mu.Unlock()

	homeA, homeB := t.TempDir(), t.TempDir()
	initHome(t, homeA)
	mustOK(t, anm(t, homeB, "", "--tailscale-socket", b.socket, "init", "--yes", "--remote", "tailnet", "--no-claude", "--no-mcp", "--no-git-hooks", "--no-sync"))
	mustOK(t, anm(t, homeA, "", "write", "--type", "semantic", "--title", "heron deploy window", "--body", "Thursdays only."))

	envA := append(os.Environ(), "ANAMNESIS_HOME="+homeA, "ANAMNESIS_MACHINE_ID=desk")
	line, stop := startServe(t, envA, "--tailscale-socket", a.socket, "serve", "--port", fmt.Sprint(port))
	if want := fmt.Sprintf("serving memory read-only on http://127.0.0.1:%d/memory", port); line != want {
		t.Fatalf("serve: %q, want %q", line, want)
	}
	// A caller on this machine itself is nobody tailscaled knows: refused.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/memory/info/refs?service=git-upload-pack", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a local caller WhoIs cannot name got %d, want 403", resp.StatusCode)
	}

	r := mustOK(t, anm(t, homeB, "", "peers"))
	if !strings.Contains(r.stdout, "serves anamnesis at http://100.64.0.1:7719/memory") || !strings.Contains(r.stdout, "userspace") {
		t.Errorf("peers through tailscaled (socket from config.json):\n%s", r.stdout)
	}
	r = runCmd(t, append(os.Environ(), "ANAMNESIS_HOME="+homeB, "ANAMNESIS_MACHINE_ID=laptop", "ANAMNESIS_TAILSCALE_SOCKET="+b.socket), "", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "fetched=true merged=true") {
		t.Fatalf("sync through tailscaled: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := mustOK(t, anm(t, homeB, "", "search", "heron deploy")); !strings.Contains(r.stdout, "heron deploy window") {
		t.Errorf("laptop lacks desk's note after the sync:\n%s", r.stdout)
	}

	// desk stops serving: laptop's sync fetches nothing, and says so.
	stop()
	r = anm(t, homeB, "", "sync")
	if r.code != 1 || !strings.Contains(r.stderr, "1 peer probed, none reachable: desk (100.64.0.1): ") || !strings.Contains(r.stderr, "local notes are committed") {
		t.Errorf("sync with the only peer down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestSyncSaysWhenNoPeerIsReachable: a mesh sync that asked peers and
// reached none fails with the count and each peer's reason; one that had
// nobody to ask says so and succeeds (local notes are committed).
func TestSyncSaysWhenNoPeerIsReachable(t *testing.T) {
	tn := newTailnetSim()
	me := tn.node(t, "laptop", 1, "100.64.0.2")
	idle := tn.node(t, "desk", 1, "100.64.0.1")    // online, serves nothing
	gone := tn.node(t, "nas", 1, "100.64.0.3")     // online, no route
	other := tn.node(t, "friend", 2, "100.64.0.4") // another user: not asked
	closed := freePort(t)
	tn.mu.Lock()
	me.peers = []*fakeNode{idle, gone, other}
	tn.forwards["100.64.0.1:7719"] = fmt.Sprintf("127.0.0.1:%d", closed)
	tn.mu.Unlock()

	home := t.TempDir()
	initHome(t, home)
	env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=laptop", "ANAMNESIS_GIT_REMOTE=tailnet", "ANAMNESIS_TAILSCALE_SOCKET="+me.socket)
	mustOK(t, runCmd(t, env, "", "write", "--type", "semantic", "--title", "kept", "--body", "written before the sync"))
	r := runCmd(t, env, "", "sync")
	if r.code != 1 || !strings.Contains(r.stderr, "2 peers probed, none reachable: ") {
		t.Fatalf("want exit 1 and the count: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"desk (100.64.0.1): ", "nas (100.64.0.3): ", "no route to 100.64.0.3"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the reasons lack %q: %s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "friend") {
		t.Errorf("another user's node was counted: %s", r.stderr)
	}
	if out, _ := exec.Command("git", "-C", filepath.Join(home, "memory"), "status", "--porcelain").Output(); len(out) != 0 {
		t.Errorf("local notes not committed:\n%s", out)
	}

	tn.mu.Lock()
	idle.offline = true
	me.peers = []*fakeNode{other, idle}
	tn.mu.Unlock()
	r = runCmd(t, env, "", "sync")
	if r.code != 0 || !strings.Contains(r.stderr, "no peer to fetch from") || !strings.Contains(r.stderr, "(1 offline)") {
		t.Errorf("nobody to ask: want exit 0 and a warning, got exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTailscaleSocketReachesEveryCommand: one setting names tailscaled's
// socket for every command that talks to it, from the global flag, the
// environment or config.json; a socket that is not there is named.
func TestTailscaleSocketReachesEveryCommand(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "that", "tailscaled.sock")
	home := t.TempDir()
	initHome(t, home)
	notRunning := "tailscaled is not running or its socket is unreachable ("
	viaFlag := func(args ...string) result {
		return anm(t, home, "", append([]string{"--tailscale-socket", sock}, args...)...)
	}
	viaEnv := func(args ...string) result {
		return runCmd(t, append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest", "ANAMNESIS_TAILSCALE_SOCKET="+sock), "", args...)
	}
	for name, run := range map[string]func(...string) result{"flag": viaFlag, "env": viaEnv} {
		if r := run("status"); r.code != 0 || !strings.Contains(r.stdout, "tailscaled not running (no answer on "+sock+")") {
			t.Errorf("%s: status: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
		for _, cmd := range [][]string{{"peers"}, {"serve"}} {
			if r := run(cmd...); r.code != 1 || !strings.Contains(r.stderr, notRunning) || !strings.Contains(r.stderr, sock) {
				t.Errorf("%s: %v: exit %d\n%s%s", name, cmd, r.code, r.stdout, r.stderr)
			}
		}
	}
	// init records it (with the remote) for every later command, the
	// hooks' background syncs included.
	mustOK(t, viaFlag("init", "--yes", "--remote", "tailnet", "--no-claude", "--no-mcp", "--no-git-hooks", "--no-sync"))
	cfg, _ := os.ReadFile(filepath.Join(home, "config.json"))
	if !strings.Contains(string(cfg), `"tailscale_socket": "`+sock+`"`) {
		t.Fatalf("config.json lacks tailscale_socket:\n%s", cfg)
	}
	if r := anm(t, home, "", "sync"); r.code != 1 || !strings.Contains(r.stderr, notRunning) || !strings.Contains(r.stderr, sock) {
		t.Errorf("sync (socket from config.json): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := anm(t, home, "", "doctor"); !strings.Contains(r.stdout, "no answer on "+sock) {
		t.Errorf("doctor (socket from config.json): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// After serve and peers, where it was first, the flag still works.
	if r := anm(t, home, "", "peers", "--tailscale-socket", sock+".other"); r.code != 1 || !strings.Contains(r.stderr, sock+".other") {
		t.Errorf("peers --tailscale-socket: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
