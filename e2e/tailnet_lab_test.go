//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tailscale.com/client/local"
	"tailscale.com/derp/derpserver"
	"tailscale.com/ipn/ipnstate"
	"tailscale.com/net/stun"
	"tailscale.com/tailcfg"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/key"
)

// The tailnet lab: a real tailnet on one machine. Tailscale's own test
// control server and DERP/STUN run in the test process on a Linux bridge
// that exists only on this machine; each node is a real tailscaled in its
// own network namespace with a veth on the bridge and no default route,
// so nothing can leave the machine. The host gains one connected route
// (the bridge's /24) and nothing else.
//
// Each node's commands run through `ip netns exec` (which also gives them
// a private mount namespace, with mounts not propagated back to the host)
// and a small sh wrapper that bind-mounts the node's own directory onto
// /var/run and a private resolv.conf onto /etc/resolv.conf. So tailscaled's
// socket is at the system default path (/var/run/tailscale/tailscaled.sock)
// inside each node: anamnesis finds it exactly as on a normal install,
// with no flag, and tailscaled can never touch the host's DNS settings.

// nodeMode is how a lab node's tailscaled connects to the tailnet.
type nodeMode string

const (
	// tunMode is the normal Linux install: a tailscale0 TUN device, the
	// Tailscale addresses and routes in the kernel.
	tunMode nodeMode = "tun"
	// userspaceMode is --tun=userspace-networking (containers, rootless
	// installs): the addresses exist only inside tailscaled.
	userspaceMode nodeMode = "userspace"
)

// nodeSpec describes one lab machine.
type nodeSpec struct {
	name string   // tailnet hostname, also the anamnesis machine id
	user string   // lab user: nodes with the same user are one tailnet user; "" keeps the node's own
	tags []string // advertised tags, e.g. "tag:ci"
	mode nodeMode // tunMode unless set
	// ownSocket starts tailscaled with --socket outside /var/run (the
	// node's default socket path then does not exist) and tells
	// anamnesis where it is through ANAMNESIS_TAILSCALE_SOCKET in the
	// node's environment, as a container's set-up would.
	ownSocket bool
}

type lab struct {
	t          *testing.T
	dir        string
	subnet     netip.Prefix // the bridge's /24
	gateway    netip.Addr   // the bridge's own address: control, DERP and STUN listen here
	bridge     string
	varRun     string // what /var/run resolves to (bind-mount target)
	control    *testcontrol.Server
	controlURL string
	tailscaled string
	tailscale  string
	anamnesis  string
	nodes      []*labNode
}

type labNode struct {
	lab    *lab
	spec   nodeSpec
	ns     string
	lan    netip.Addr // address on the bridge
	dir    string
	runDir string // bind-mounted onto /var/run inside the node
	resolv string // bind-mounted onto /etc/resolv.conf inside the node
	socket string // tailscaled's socket, the same path inside the node and on the host
	home   string
	env    []string
	lc     *local.Client // tailscaled's local API, from the host side
	key    key.NodePublic
	user   tailcfg.UserID
	ips    []netip.Addr // Tailscale addresses
}

// labPrereqs skips the test, saying why, where the lab cannot run.
func labPrereqs(t *testing.T, nodes []nodeSpec) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: the tailnet lab needs root (network namespaces, a bridge, TUN devices); run `make e2e` as root")
	}
	needDebian(t, []string{"ip", "mount", "curl", "git"}, "iproute2", "mount", "curl", "git")
	if slices.ContainsFunc(nodes, func(s nodeSpec) bool { return s.mode != userspaceMode }) {
		f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
		if err != nil {
			t.Skipf("skipped: TUN mode needs /dev/net/tun (%v); load the tun module or give the container the device", err)
		}
		f.Close()
	}
}

// newLab starts control, DERP/STUN and one tailscaled per spec, logs every
// node in, puts nodes in their users, and waits until every node sees
// every other online with its final user and tags. Everything is removed
// when the test ends, failed or not.
func newLab(t *testing.T, specs ...nodeSpec) *lab {
	t.Helper()
	labPrereqs(t, specs)
	start := time.Now()
	l := &lab{t: t, dir: t.TempDir()}
	var err error
	if l.varRun, err = filepath.EvalSymlinks("/var/run"); err != nil {
		t.Skipf("skipped: no /var/run to hold each node's tailscaled socket: %v", err)
	}
	t.Logf("tailnet lab: tailscaled and tailscale %s from %s (a first build takes minutes: about 12 on 2 cores)", tailscaleVersion, filepath.Join(cacheDir(), "bin"))
	l.tailscaled = goInstall(t, "tailscale.com/cmd/tailscaled@"+tailscaleVersion, "tailscaled")
	l.tailscale = goInstall(t, "tailscale.com/cmd/tailscale@"+tailscaleVersion, "tailscale")
	l.anamnesis = anamnesisBinary(t)
	t.Logf("tailnet lab: tailscaled, tailscale and anamnesis ready after %v", time.Since(start).Round(time.Millisecond))

	l.setupBridge()
	l.startControl()
	for i, s := range specs {
		if s.mode == "" {
			s.mode = tunMode
		}
		l.addNode(i, s)
	}
	up := time.Now()
	l.each(func(n *labNode) error { return n.startTailscaled() })
	l.each(func(n *labNode) error { return n.up() })
	l.assignUsers()
	l.awaitMesh()
	t.Logf("tailnet lab: %d nodes up in %v (bridge %s, %s)", len(l.nodes), time.Since(up).Round(time.Millisecond), l.bridge, l.subnet)
	return l
}

// sh runs a host command for the lab's set-up; failures are fatal.
func (l *lab) sh(args ...string) string {
	l.t.Helper()
	out, err := l.shErr(args...)
	if err != nil {
		l.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (l *lab) shErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	return string(out), err
}

// setupBridge creates the bridge on the first 10.77.N.0/24 that no host
// route overlaps and no other lab holds (creating the bridge is the claim:
// `ip link add` fails when the name exists).
func (l *lab) setupBridge() {
	t := l.t
	l.removeStaleLabs()
	routes, err := l.shErr("ip", "-4", "route", "show", "table", "all")
	if err != nil {
		t.Skipf("skipped: cannot list routes (%v): %s", err, routes)
	}
	var used []netip.Prefix
	for _, line := range strings.Split(routes, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if slices.Contains([]string{"local", "broadcast", "unicast", "multicast"}, dst) && len(f) > 1 {
			dst = f[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil && p.Bits() > 0 {
			used = append(used, p)
		}
	}
	for n := 77; n < 200; n++ {
		p := netip.MustParsePrefix(fmt.Sprintf("10.77.%d.0/24", n))
		if slices.ContainsFunc(used, p.Overlaps) {
			continue
		}
		name := fmt.Sprintf("anmbr%d", n)
		if out, err := l.shErr("ip", "link", "add", name, "type", "bridge"); err != nil {
			if strings.Contains(out, "Operation not permitted") {
				t.Skipf("skipped: cannot create a bridge: %s", out)
			}
			continue
		}
		l.subnet, l.bridge = p, name
		l.gateway = p.Addr().Next()
		t.Cleanup(func() { l.shErr("ip", "link", "del", name) })
		l.sh("ip", "link", "set", name, "alias", fmt.Sprintf("%s%d", labAlias, os.Getpid()))
		l.sh("ip", "addr", "add", netip.PrefixFrom(l.gateway, 24).String(), "dev", name)
		l.sh("ip", "link", "set", name, "up")
		return
	}
	t.Fatal("tailnet lab: no free 10.77.N.0/24 for the bridge")
}

// labAlias prefixes the alias of each lab's bridge, followed by the pid
// of the test process that owns it.
const labAlias = "anamnesis-e2e-lab pid "

// removeStaleLabs deletes the bridge and namespaces of labs whose test
// process died without running its cleanups (a `go test` timeout exits at
// once); their daemons died with it (Pdeathsig).
func (l *lab) removeStaleLabs() {
	out, err := l.shErr("ip", "-o", "link", "show", "type", "bridge")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		_, pidText, ok := strings.Cut(line, "alias "+labAlias)
		if len(f) < 2 || !ok || !strings.HasPrefix(f[1], "anmbr") {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(pidText, &pid); err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		l.t.Logf("tailnet lab: removing %s, left by test process %d that no longer runs", name, pid)
		nss, _ := l.shErr("ip", "netns", "list")
		for _, ns := range strings.Split(nss, "\n") {
			if ns, _, _ = strings.Cut(ns, " "); strings.HasPrefix(ns, name+"-") {
				l.shErr("ip", "netns", "del", ns)
			}
		}
		l.shErr("ip", "link", "del", name)
	}
}

// startControl serves testcontrol over plain HTTP on the bridge address,
// with a DERP relay (TLS) and a STUN responder on the same address.
func (l *lab) startControl() {
	t := l.t
	logf := fileLogf(t, filepath.Join(l.dir, "control.log"))
	ln, err := net.Listen("tcp", net.JoinHostPort(l.gateway.String(), "0"))
	if err != nil {
		t.Fatalf("listen for the control server: %v", err)
	}
	l.controlURL = "http://" + ln.Addr().String()
	l.control = &testcontrol.Server{
		DERPMap:         l.startDERPAndSTUN(logf),
		ExplicitBaseURL: l.controlURL,
		Logf:            logf,
		// A non-nil TagOwners makes advertised tags become Node.Tags.
		TagOwners: map[string][]string{"tag:ci": nil, "tag:anamnesis": nil},
		// Without it testcontrol reports every peer offline.
		AllOnline: true,
	}
	srv := &http.Server{Handler: l.control, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// startDERPAndSTUN runs Tailscale's DERP server (derpserver, over TLS
// with a self-signed certificate the nodes accept because the map says
// InsecureForTests) and a STUN responder (net/stun), both on the bridge
// address only, and returns the one-region DERP map naming them.
//
// This is what tstest/integration.RunDERPAndSTUN does, written here
// because importing that package pulls tailscaled's whole backend
// (ipnlocal, the AWS and TPM state stores) into the module graph, which
// raised golang.org/x/net, x/crypto and x/term in go.mod: versions the
// product binary links. Its STUN responder also listens on every
// interface; this one listens on the bridge address alone.
func (l *lab) startDERPAndSTUN(logf func(string, ...any)) *tailcfg.DERPMap {
	t := l.t
	ip := l.gateway.String()
	d := derpserver.New(key.NewNode(), logf)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen for DERP: %v", err)
	}
	hs := httptest.NewUnstartedServer(derpserver.Handler(d))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Config.ErrorLog = log.New(logWriter(logf), "derp: ", 0)
	hs.StartTLS()
	pc, err := net.ListenPacket("udp4", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen for STUN: %v", err)
	}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, src, err := pc.(*net.UDPConn).ReadFromUDPAddrPort(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil || !stun.Is(buf[:n]) {
				continue
			}
			if tx, err := stun.ParseBindingRequest(buf[:n]); err == nil {
				pc.WriteTo(stun.Response(tx, netip.AddrPortFrom(src.Addr().Unmap(), src.Port())), net.UDPAddrFromAddrPort(src))
			}
		}
	}()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		d.Close()
		pc.Close()
	})
	return &tailcfg.DERPMap{Regions: map[int]*tailcfg.DERPRegion{
		1: {RegionID: 1, RegionCode: "lab", RegionName: "anamnesis lab", Nodes: []*tailcfg.DERPNode{{
			Name: "lab1", RegionID: 1, HostName: ip, IPv4: ip, IPv6: "none",
			DERPPort: ln.Addr().(*net.TCPAddr).Port, STUNPort: pc.LocalAddr().(*net.UDPAddr).Port,
			STUNTestIP: ip, InsecureForTests: true,
		}}},
	}}
}

type logWriter func(string, ...any)

func (w logWriter) Write(p []byte) (int, error) {
	w("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// fileLogf writes a logger's lines to path; the file is shown on failure.
func fileLogf(t *testing.T, path string) func(string, ...any) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	closed := false
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		closed = true
		f.Close()
	})
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			fmt.Fprintf(f, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
		}
	}
}

// addNode makes the node's namespace, veth and directories.
func (l *lab) addNode(i int, s nodeSpec) {
	t := l.t
	n := &labNode{lab: l, spec: s, dir: filepath.Join(l.dir, s.name)}
	n.ns = fmt.Sprintf("%s-%s", l.bridge, s.name)
	n.lan = l.gateway
	for range i + 10 {
		n.lan = n.lan.Next()
	}
	n.runDir = filepath.Join(n.dir, "run")
	n.resolv = filepath.Join(n.dir, "resolv.conf")
	n.home = filepath.Join(n.dir, "home")
	for _, d := range []string{n.runDir, n.home, filepath.Join(n.dir, "state"), filepath.Join(n.dir, "elsewhere")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// No nameserver: nothing in the lab resolves names, and nothing may
	// ask the host's resolver from inside a node.
	if err := os.WriteFile(n.resolv, []byte("# anamnesis tailnet lab: no DNS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.socket = filepath.Join(n.runDir, "tailscale", "tailscaled.sock") // /var/run/tailscale/tailscaled.sock inside
	if s.ownSocket {
		n.socket = filepath.Join(n.dir, "elsewhere", "tailscaled.sock")
	}
	n.lc = &local.Client{Socket: n.socket, UseSocketOnly: true}
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if k == "HOME" || strings.HasPrefix(k, "ANAMNESIS_") || strings.HasPrefix(k, "CLAUDE_") || strings.HasPrefix(k, "GIT_") ||
			strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		n.env = append(n.env, e)
	}
	n.env = append(n.env, "HOME="+n.home, "ANAMNESIS_MACHINE_ID="+s.name, "GIT_TERMINAL_PROMPT=0")
	if s.ownSocket {
		n.env = append(n.env, "ANAMNESIS_TAILSCALE_SOCKET="+n.socket)
	}

	if out, err := l.shErr("ip", "netns", "add", n.ns); err != nil {
		t.Skipf("skipped: cannot create a network namespace (%v): %s", err, out)
	}
	t.Cleanup(func() { l.shErr("ip", "netns", "del", n.ns) })
	host, peer := fmt.Sprintf("%sh%d", strings.TrimPrefix(l.bridge, "anmbr"), i), fmt.Sprintf("%sp%d", strings.TrimPrefix(l.bridge, "anmbr"), i)
	host, peer = "anm"+host, "anm"+peer
	l.sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { l.shErr("ip", "link", "del", host) }) // gone with the namespace, unless set-up failed before the move
	l.sh("ip", "link", "set", peer, "netns", n.ns)
	l.sh("ip", "link", "set", host, "master", l.bridge, "up")
	l.sh("ip", "-n", n.ns, "link", "set", peer, "name", "eth0")
	l.sh("ip", "-n", n.ns, "addr", "add", netip.PrefixFrom(n.lan, 24).String(), "dev", "eth0")
	l.sh("ip", "-n", n.ns, "link", "set", "eth0", "up")
	l.sh("ip", "-n", n.ns, "link", "set", "lo", "up")
	if s.mode == tunMode {
		// TUN devices must be creatable in a namespace (some containers
		// hand out /dev/net/tun but refuse TUNSETIFF).
		if out, err := l.shErr("ip", "-n", n.ns, "tuntap", "add", "dev", "anmprobe", "mode", "tun"); err != nil {
			t.Skipf("skipped: TUN devices unavailable in a network namespace: %s", strings.TrimSpace(out))
		}
		l.sh("ip", "-n", n.ns, "tuntap", "del", "dev", "anmprobe", "mode", "tun")
	}
	l.nodes = append(l.nodes, n)
}

// each runs f on every node at once and fails the test with every error.
func (l *lab) each(f func(*labNode) error) {
	l.t.Helper()
	errs := make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		wg.Go(func() { errs[i] = f(n) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		l.dumpLogs()
		l.t.Fatal(err)
	}
}

// dumpLogs shows the end of every daemon log (on failure).
func (l *lab) dumpLogs() {
	paths, _ := filepath.Glob(filepath.Join(l.dir, "*", "*.log"))
	paths = append(paths, filepath.Join(l.dir, "control.log"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			l.t.Logf("--- %s (end):\n%s", strings.TrimPrefix(p, l.dir+"/"), tail(data, 3000))
		}
	}
}

func (l *lab) node(name string) *labNode {
	for _, n := range l.nodes {
		if n.spec.name == name {
			return n
		}
	}
	l.t.Fatalf("no lab node %q", name)
	return nil
}

// wrapper is the sh script every node command runs through (see the top
// of this file): $1 onto /var/run, $2 onto /etc/resolv.conf.
const wrapper = `mount --bind "$1" "$2" && mount --bind "$3" /etc/resolv.conf && shift 3 && exec "$@"`

// command runs name in the node: its network namespace, its /var/run
// (so the default tailscaled socket is its own), its HOME.
func (n *labNode) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	full := append([]string{"netns", "exec", n.ns, "sh", "-c", wrapper, "sh", n.runDir, n.lab.varRun, n.resolv, name}, args...)
	cmd := exec.CommandContext(ctx, "ip", full...)
	cmd.Env = n.env
	cmd.Dir = n.home
	// ip and sh exec into the command, so this is the command itself: it
	// dies with the test binary even if cleanups never run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs a command in the node, bounded by timeout.
func (n *labNode) run(timeout time.Duration, stdin string, name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := n.command(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (gave up after %v)", err, timeout)
	}
	return out.String(), errb.String(), err
}

// anamnesis runs the CLI in the node and fails the test if it fails.
func (n *labNode) anamnesis(args ...string) string {
	n.lab.t.Helper()
	out, errs, err := n.run(2*time.Minute, "", n.lab.anamnesis, args...)
	if err != nil {
		n.lab.t.Fatalf("%s: anamnesis %s: %v\n%s%s", n.spec.name, strings.Join(args, " "), err, out, errs)
	}
	return out
}

// anamnesisFails runs the CLI in the node, expecting exit status 1 and
// one line on stderr, and returns that line; anything else fails the
// test.
func (n *labNode) anamnesisFails(args ...string) string {
	n.lab.t.Helper()
	out, errs, err := n.run(2*time.Minute, "", n.lab.anamnesis, args...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		n.lab.t.Fatalf("%s: anamnesis %s: want exit status 1, got %v\n%s%s", n.spec.name, strings.Join(args, " "), err, out, errs)
	}
	line := strings.TrimSuffix(errs, "\n")
	if line == "" || strings.Contains(line, "\n") {
		n.lab.t.Errorf("%s: anamnesis %s: want one line on stderr, got %q", n.spec.name, strings.Join(args, " "), errs)
	}
	return line
}

// daemon is a background process of a node.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// stop ends the process: SIGTERM (tailscaled removes its device and
// routes), SIGKILL after 5 s.
func (d *daemon) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// start runs a process in the node in the background, its output in
// <node>/<logName>.log; it is stopped when the test ends.
func (n *labNode) start(logName string, stdout io.Writer, name string, args ...string) (*daemon, error) {
	log, err := os.Create(filepath.Join(n.dir, logName+".log"))
	if err != nil {
		return nil, err
	}
	cmd := n.command(context.Background(), name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if stdout != nil {
		cmd.Stdout = io.MultiWriter(log, stdout)
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: start %s: %w", n.spec.name, name, err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		log.Close()
		close(d.done)
	}()
	n.lab.t.Cleanup(d.stop)
	return d, nil
}

func (n *labNode) startTailscaled() error {
	socket := "/var/run/tailscale/tailscaled.sock"
	if n.spec.ownSocket {
		socket = n.socket
	}
	args := []string{"--statedir=" + filepath.Join(n.dir, "state"), "--socket=" + socket,
		"--tun=tailscale0", "--port=0", "--no-logs-no-support", "--encrypt-state=false"}
	if n.spec.mode == userspaceMode {
		// The kernel has no route to the tailnet here: curl and git reach
		// it through tailscaled's SOCKS5 proxy, as in a container.
		args[2] = "--tun=userspace-networking"
		args = append(args, "--socks5-server="+labSOCKS5)
	}
	d, err := n.start("tailscaled", nil, n.lab.tailscaled, args...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, err := n.lc.Status(ctx); err == nil {
			return nil
		}
		select {
		case <-d.done:
			return fmt.Errorf("%s: tailscaled exited: %v", n.spec.name, d.err)
		case <-ctx.Done():
			return fmt.Errorf("%s: tailscaled's local API did not answer within 30 s", n.spec.name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// up logs the node in with the CLI (the default socket path, as a user
// would) and waits until it runs and has its addresses.
func (n *labNode) up() error {
	args := []string{"up", "--login-server=" + n.lab.controlURL, "--hostname=" + n.spec.name,
		"--accept-dns=false", "--timeout=60s"}
	if n.spec.ownSocket {
		args = append([]string{"--socket=" + n.socket}, args...)
	}
	if n.spec.mode == tunMode {
		args = append(args, "--netfilter-mode=off")
	}
	if len(n.spec.tags) > 0 {
		args = append(args, "--advertise-tags="+strings.Join(n.spec.tags, ","))
	}
	if out, errs, err := n.run(90*time.Second, "", n.lab.tailscale, args...); err != nil {
		return fmt.Errorf("%s: tailscale up: %v\n%s%s", n.spec.name, err, out, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		st, err := n.lc.Status(ctx)
		if err == nil && st.BackendState == "Running" && len(st.TailscaleIPs) > 0 && st.Self != nil {
			n.ips, n.key = st.TailscaleIPs, st.Self.PublicKey
			return n.checkMode()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not Running with addresses within 30 s (last: %v, %v)", n.spec.name, err, st)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkMode makes sure the node runs as its spec says: in TUN mode the
// kernel holds its Tailscale address on tailscale0; in userspace mode
// the namespace has no tailscale0 at all.
func (n *labNode) checkMode() error {
	out, err := n.lab.shErr("ip", "-n", n.ns, "-br", "addr", "show", "dev", "tailscale0")
	switch {
	case n.spec.mode == tunMode && (err != nil || !strings.Contains(out, n.ips[0].String())):
		return fmt.Errorf("%s: TUN mode, but tailscale0 does not hold %v: %v %s", n.spec.name, n.ips[0], err, out)
	case n.spec.mode == userspaceMode && err == nil:
		return fmt.Errorf("%s: userspace mode, but the namespace has tailscale0: %s", n.spec.name, out)
	}
	return nil
}

// assignUsers moves nodes into their lab users: testcontrol gives each
// new node key a user of its own, so the first node of each lab user
// lends its user to the others. (A tagged node keeps a user in
// testcontrol, unlike real Tailscale, where it belongs to the tag.)
func (l *lab) assignUsers() {
	users := map[string]tailcfg.UserID{}
	for _, n := range l.nodes {
		node := l.control.Node(n.key)
		if node == nil {
			l.t.Fatalf("%s: control does not know node key %v", n.spec.name, n.key)
		}
		n.user = node.User
		if n.spec.user == "" {
			continue
		}
		id, ok := users[n.spec.user]
		if !ok {
			users[n.spec.user] = node.User
			continue
		}
		if node.User != id {
			node.User = id
			l.control.UpdateNode(node)
		}
		n.user = id
	}
}

// awaitMesh waits until every node sees itself and every other node with
// its final user, tags and addresses, online.
func (l *lab) awaitMesh() {
	l.t.Helper()
	want := map[key.NodePublic]*labNode{}
	for _, n := range l.nodes {
		want[n.key] = n
	}
	l.each(func(n *labNode) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var why string
		for {
			st, err := n.lc.Status(ctx)
			if err == nil {
				why = meshMismatch(n, st, want)
				if why == "" {
					return nil
				}
			} else {
				why = err.Error()
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: the tailnet did not settle within 30 s: %s", n.spec.name, why)
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

func meshMismatch(n *labNode, st *ipnstate.Status, want map[key.NodePublic]*labNode) string {
	if st.Self == nil || st.Self.UserID != n.user {
		return fmt.Sprintf("self is not yet user %d", n.user)
	}
	seen := 0
	for _, k := range st.Peers() {
		p := st.Peer[k]
		o := want[k]
		if o == nil {
			return fmt.Sprintf("unknown peer %s", p.HostName)
		}
		var tags []string
		if p.Tags != nil {
			tags = p.Tags.AsSlice()
		}
		switch {
		case !p.Online:
			return p.HostName + " offline"
		case p.UserID != o.user:
			return fmt.Sprintf("%s is user %d, want %d", p.HostName, p.UserID, o.user)
		case !slices.Equal(tags, o.spec.tags):
			return fmt.Sprintf("%s has tags %v, want %v", p.HostName, tags, o.spec.tags)
		case len(p.TailscaleIPs) == 0:
			return p.HostName + " has no address"
		}
		seen++
	}
	if seen != len(want)-1 {
		return fmt.Sprintf("sees %d peers of %d", seen, len(want)-1)
	}
	return ""
}

// ip4 is the node's Tailscale IPv4 address.
func (n *labNode) ip4() string {
	for _, ip := range n.ips {
		if ip.Is4() {
			return ip.String()
		}
	}
	n.lab.t.Fatalf("%s has no Tailscale IPv4 address", n.spec.name)
	return ""
}

// serve starts `anamnesis serve` in the node and waits (bounded) until it
// listens.
func (n *labNode) serve(args ...string) *daemon {
	t := n.lab.t
	t.Helper()
	pr, pw := io.Pipe()
	d, err := n.start("serve", pw, n.lab.anamnesis, append([]string{"serve"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "serving memory read-only on ") {
				select {
				case listening <- sc.Text():
				default:
				}
			}
		}
	}()
	go func() { <-d.done; pw.Close() }()
	select {
	case line := <-listening:
		t.Logf("%s: %s", n.spec.name, line)
	case <-d.done:
		data, _ := os.ReadFile(filepath.Join(n.dir, "serve.log"))
		t.Fatalf("%s: anamnesis serve exited: %v\n%s", n.spec.name, d.err, data)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: anamnesis serve did not listen within 30 s", n.spec.name)
	}
	return d
}

// anamnesisErr runs the CLI in the node and returns an error naming the
// command and its output when it fails.
func (n *labNode) anamnesisErr(args ...string) (string, error) {
	out, errs, err := n.run(2*time.Minute, "", n.lab.anamnesis, args...)
	if err != nil {
		return out, fmt.Errorf("%s: anamnesis %s: %v\n%s%s", n.spec.name, strings.Join(args, " "), err, out, errs)
	}
	return out, nil
}

// labSOCKS5 is where a userspace node's tailscaled offers its SOCKS5
// proxy to the tailnet, inside the node.
const labSOCKS5 = "127.0.0.1:1055"

// tailnetProxy is how programs in the node reach the tailnet: "" (the
// kernel) in TUN mode, tailscaled's SOCKS5 proxy in userspace mode.
func (n *labNode) tailnetProxy() string {
	if n.spec.mode == userspaceMode {
		return "socks5h://" + labSOCKS5
	}
	return ""
}

// tailnetCode is httpCode for a URL on the tailnet, made the node's way
// (see tailnetProxy).
func (n *labNode) tailnetCode(method, url, contentType, body string) string {
	var proxy []string
	if p := n.tailnetProxy(); p != "" {
		proxy = []string{"--proxy", p}
	}
	return n.curlCode(proxy, method, url, contentType, body)
}

// httpCode makes one plain HTTP request from inside the node with curl
// and returns the status code ("000" when no answer came).
func (n *labNode) httpCode(method, url, contentType, body string) string {
	return n.curlCode(nil, method, url, contentType, body)
}

func (n *labNode) curlCode(extra []string, method, url, contentType, body string) string {
	args := append([]string{"-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-X", method}, extra...)
	if contentType != "" {
		args = append(args, "-H", "Content-Type: "+contentType, "--data-binary", "@-")
	}
	out, errs, err := n.run(20*time.Second, body, "curl", append(args, url)...)
	if err != nil {
		return strings.TrimSpace(out) + " (" + strings.TrimSpace(errs) + ")"
	}
	return strings.TrimSpace(out)
}

// TestTailnetLabTUN runs anamnesis on a real tailnet of TUN-mode nodes
// (the normal Linux install): three machines of one user, a machine of
// another user, and a node tagged tag:ci that belongs to the same user.
func TestTailnetLabTUN(t *testing.T) {
	begin := time.Now()
	l := newLab(t,
		nodeSpec{name: "alpha", user: "alice"},
		nodeSpec{name: "bravo", user: "alice"},
		nodeSpec{name: "charlie", user: "alice"},
		nodeSpec{name: "xray", user: "bob"},
		nodeSpec{name: "tango", user: "alice", tags: []string{"tag:ci"}},
	)
	alpha, bravo, charlie, xray, tango := l.node("alpha"), l.node("bravo"), l.node("charlie"), l.node("xray"), l.node("tango")
	scenario := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			l.dumpLogs()
		}
	})

	// Every machine gets a store whose remote is the tailnet; alpha and
	// bravo each hold a note of their own and serve.
	l.each(func(n *labNode) error {
		_, err := n.anamnesisErr("init", "--yes", "--remote", "tailnet", "--no-claude", "--no-mcp", "--no-sync")
		return err
	})
	ids := map[string]string{}
	for _, n := range []*labNode{alpha, bravo} {
		ids[n.spec.name] = strings.TrimSpace(n.anamnesis("write", "--type", "semantic", "--title", "note from "+n.spec.name,
			"--body", "written on "+n.spec.name))
		// Nobody serves yet: the sync commits the note and says that the
		// three machines it asked (tango too: testcontrol keeps a tagged
		// node in its user) did not answer.
		msg := n.anamnesisFails("sync")
		if !strings.Contains(msg, "mesh sync: 3 peers probed, none reachable: ") || !strings.Contains(msg, "local notes are committed") {
			t.Errorf("%s: first sync, nobody serving: got %q, want \"3 peers probed, none reachable\"", n.spec.name, msg)
		}
	}
	alphaServe := alpha.serve()
	bravo.serve()

	// peers on charlie: alpha and bravo serve; xray is another user's;
	// tango carries its tag; nobody else serves.
	var peers struct {
		Self  string
		Peers []struct {
			Name     string   `json:"name"`
			Online   bool     `json:"online"`
			SameUser bool     `json:"same_user"`
			Tags     []string `json:"tags"`
			Serves   bool     `json:"serves_anamnesis"`
			URL      string   `json:"url"`
		}
	}
	mustJSON(t, charlie.anamnesis("peers", "--json"), &peers)
	got := map[string]string{}
	for _, p := range peers.Peers {
		got[p.Name] = fmt.Sprintf("online=%v same_user=%v tags=%v serves=%v url=%s", p.Online, p.SameUser, p.Tags, p.Serves, p.URL)
	}
	url := func(n *labNode) string { return "http://" + n.ip4() + ":7719/memory" }
	want := map[string]string{
		"alpha": "online=true same_user=true tags=[] serves=true url=" + url(alpha),
		"bravo": "online=true same_user=true tags=[] serves=true url=" + url(bravo),
		"xray":  "online=true same_user=false tags=[] serves=false url=",
		"tango": "online=true same_user=true tags=[tag:ci] serves=false url=",
	}
	if peers.Self != "charlie" || !mapsEqual(got, want) {
		t.Errorf("peers on charlie:\n got self=%s %v\nwant self=charlie %v", peers.Self, got, want)
	}

	// charlie writes a note and syncs with remote "tailnet": it fetches
	// from alpha and bravo, found through tailscaled, and merges both.
	ids["charlie"] = strings.TrimSpace(charlie.anamnesis("write", "--type", "semantic", "--title", "note from charlie", "--body", "written on charlie"))
	var rep struct {
		Remote string
		Peers  []struct {
			URL     string `json:"url"`
			Fetched bool   `json:"fetched"`
			Error   string `json:"error"`
		}
	}
	syncStart := time.Now()
	mustJSON(t, charlie.anamnesis("sync", "--json"), &rep)
	t.Logf("charlie: sync with remote tailnet took %v", time.Since(syncStart).Round(time.Millisecond))
	var fetched []string
	for _, p := range rep.Peers {
		if !p.Fetched || p.Error != "" {
			t.Errorf("charlie's sync: peer %s fetched=%v error=%q", p.URL, p.Fetched, p.Error)
		}
		fetched = append(fetched, p.URL)
	}
	slices.Sort(fetched)
	wantF := []string{url(alpha), url(bravo)}
	slices.Sort(wantF)
	if !slices.Equal(fetched, wantF) {
		t.Errorf("charlie's sync fetched from %v, want %v (report: %+v)", fetched, wantF, rep)
	}
	if have := noteIDs(t, charlie); !have[ids["alpha"]] || !have[ids["bravo"]] || !have[ids["charlie"]] {
		t.Errorf("charlie after sync has %v, want alpha's, bravo's and its own %v", have, ids)
	}

	// Convergence: charlie serves too; alpha, bravo and charlie sync in
	// turn until all three hold every note and the same tree (bounded).
	charlie.serve()
	converge(t, []*labNode{alpha, bravo, charlie}, ids)

	// The authorization matrix against alpha's endpoint, by plain HTTP
	// from inside each node: the same user's machines read, another
	// user's machine and a tagged node alpha does not allow get 403, and
	// nobody pushes.
	matrix := func(allowed map[string]bool) {
		t.Helper()
		for _, n := range []*labNode{bravo, charlie, xray, tango} {
			wantCode := "403"
			if allowed[n.spec.name] {
				wantCode = "200"
			}
			if code := n.httpCode("GET", url(alpha)+"/info/refs?service=git-upload-pack", "", ""); code != wantCode {
				t.Errorf("%s → alpha upload-pack advertisement: %s, want %s", n.spec.name, code, wantCode)
			}
			if code := n.httpCode("GET", url(alpha)+"/info/refs?service=git-receive-pack", "", ""); code != "403" {
				t.Errorf("%s → alpha receive-pack advertisement: %s, want 403", n.spec.name, code)
			}
			if code := n.httpCode("POST", url(alpha)+"/git-receive-pack", "application/x-git-receive-pack-request", "0000"); code != "403" {
				t.Errorf("%s → alpha git-receive-pack: %s, want 403", n.spec.name, code)
			}
		}
	}
	matrix(map[string]bool{"bravo": true, "charlie": true})
	// tailscaled named the refused callers (WhoIs answered): the 403s are
	// decisions about who they are, not unknown addresses.
	alphaLog, _ := os.ReadFile(filepath.Join(alpha.dir, "serve.log"))
	for _, who := range []string{"xray (user-", "tango (user-"} {
		if !bytes.Contains(alphaLog, []byte(who)) {
			t.Errorf("alpha's serve log does not name %s as refused:\n%s", who, tail(alphaLog, 2000))
		}
	}

	// git itself reads from alpha where it is allowed (interop), is
	// refused elsewhere, and cannot push.
	clone := func(n *labNode, from *labNode) (string, error) {
		dir, err := os.MkdirTemp(n.home, "clone-of-"+from.spec.name+"-")
		if err != nil {
			t.Fatal(err)
		}
		out, errs, err := n.run(time.Minute, "", "git", "clone", "--quiet", url(from), dir)
		return dir, errorWith(err, out+errs)
	}
	dir, err := clone(bravo, alpha)
	if err != nil {
		t.Errorf("bravo: git clone of alpha: %v", err)
	} else {
		if out, _, _ := bravo.run(time.Minute, "", "git", "-C", dir, "log", "--format=%s", "-n", "50"); out == "" {
			t.Errorf("bravo's clone of alpha has no history")
		}
		if matches, _ := filepath.Glob(filepath.Join(dir, "*", ids["alpha"]+".md")); len(matches) == 0 {
			t.Errorf("bravo's clone of alpha lacks alpha's note %s", ids["alpha"])
		}
		if out, errs, err := bravo.run(time.Minute, "", "git", "-C", dir, "push", "origin", "HEAD:refs/heads/intruder"); err == nil || !strings.Contains(out+errs, "403") {
			t.Errorf("bravo: git push to alpha: want a 403 refusal, got %v\n%s%s", err, out, errs)
		}
	}
	if _, err := clone(xray, alpha); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("xray: git clone of alpha: want a 403 refusal, got %v", err)
	}
	if _, err := clone(tango, alpha); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("tango: git clone of alpha before tag:ci is allowed: want a 403 refusal, got %v", err)
	}

	// alpha allows tag:ci (config.json tailnet_allow_tags) and restarts
	// serve: tango now reads alpha, and only alpha (bravo does not list
	// the tag); pushes stay refused.
	setConfig(t, alpha, "tailnet_allow_tags", []string{"tag:ci"})
	alphaServe.stop()
	alpha.serve()
	matrix(map[string]bool{"bravo": true, "charlie": true, "tango": true})
	if _, err := clone(tango, alpha); err != nil {
		t.Errorf("tango: git clone of alpha with tag:ci allowed: %v", err)
	}
	if code := tango.httpCode("GET", url(bravo)+"/info/refs?service=git-upload-pack", "", ""); code != "403" {
		t.Errorf("tango → bravo (tag:ci not allowed there): %s, want 403", code)
	}
	t.Logf("tailnet lab: scenario %v, whole test %v", time.Since(scenario).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

func mustJSON(t *testing.T, data string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(data), v); err != nil {
		t.Fatalf("parse JSON: %v\n%s", err, data)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func errorWith(err error, output string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %s", err, strings.TrimSpace(output))
}

// noteIDs lists the ids of the notes the node's store holds.
func noteIDs(t *testing.T, n *labNode) map[string]bool {
	t.Helper()
	var res struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	mustJSON(t, n.anamnesis("list", "--json"), &res)
	ids := map[string]bool{}
	for _, r := range res.Results {
		ids[r.ID] = true
	}
	return ids
}

// sameTrees reports whether every node's memory/ HEAD has the same tree.
func sameTrees(t *testing.T, nodes []*labNode) bool {
	t.Helper()
	var first string
	for i, n := range nodes {
		out, errs, err := n.run(time.Minute, "", "git", "-C", filepath.Join(n.home, ".anamnesis", "memory"), "rev-parse", "HEAD^{tree}")
		if err != nil {
			t.Fatalf("%s: git rev-parse: %v\n%s", n.spec.name, err, errs)
		}
		if i == 0 {
			first = out
		} else if out != first {
			return false
		}
	}
	return true
}

// setConfig sets one key of the node's config.json, keeping the others.
func setConfig(t *testing.T, n *labNode, k string, v any) {
	t.Helper()
	p := filepath.Join(n.home, ".anamnesis", "config.json")
	cfg := map[string]any{}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	cfg[k] = v
	if data, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// converge has the nodes sync in turn, at most three rounds, until they
// hold the same tree, and checks that each then has every note in ids
// (writer name to note id).
func converge(t *testing.T, nodes []*labNode, ids map[string]string) {
	t.Helper()
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.spec.name
	}
	converged := 0
	for round := 1; round <= 3 && converged == 0; round++ {
		for _, n := range nodes {
			n.anamnesis("sync")
		}
		if sameTrees(t, nodes) {
			converged = round
		}
	}
	if converged == 0 {
		t.Errorf("%s did not converge in 3 rounds of sync", strings.Join(names, ", "))
	} else {
		t.Logf("%s converged in %d round(s)", strings.Join(names, ", "), converged)
	}
	for _, n := range nodes {
		have := noteIDs(t, n)
		for who, id := range ids {
			if !have[id] {
				t.Errorf("%s lacks %s's note %s", n.spec.name, who, id)
			}
		}
	}
}
