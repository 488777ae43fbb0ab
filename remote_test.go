package anamnesis

import (
	"slices"
	"testing"
)

func TestParseRemote(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Remote
	}{
		{"", Remote{}},
		{"  /srv/memory.git ", Remote{Hub: "/srv/memory.git"}},
		{"ssh://me@box/memory.git", Remote{Hub: "ssh://me@box/memory.git"}},
		{"tailnet", Remote{Tailnet: true}},
		{" tailnet\n", Remote{Tailnet: true}},
		{"peers:http://a:7719", Remote{Peers: []string{"http://a:7719"}}},
		{"http://a:7719, http://b:7719,", Remote{Peers: []string{"http://a:7719", "http://b:7719"}}},
	} {
		got := ParseRemote(c.in)
		if got.Hub != c.want.Hub || got.Tailnet != c.want.Tailnet || !slices.Equal(got.Peers, c.want.Peers) {
			t.Errorf("ParseRemote(%q) = %+v, want %+v", c.in, got, c.want)
		}
		if got.IsMesh() != (c.want.Tailnet || len(c.want.Peers) > 0) {
			t.Errorf("ParseRemote(%q).IsMesh() = %v", c.in, got.IsMesh())
		}
	}
}

// A Store opened without a Tailnet (a library user) cannot sync with
// "tailnet" and says so, instead of pretending the mesh was empty.
func TestTailnetRemoteWithoutTailnet(t *testing.T) {
	home := t.TempDir()
	s, err := Open(ctx, home, Options{MachineID: "m", Create: true, Remote: "tailnet"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Sync(ctx, SyncOptions{}); err == nil {
		t.Fatal("sync with remote tailnet and no Tailnet succeeded")
	}
	if st, err := s.Status(ctx); err != nil || st.Sync.Tailnet == "" {
		t.Errorf("status tailnet %q, %v", st.Sync.Tailnet, err)
	}
}
