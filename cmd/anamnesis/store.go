package main

import (
	"context"
	"fmt"
	"os"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/urfave/cli/v2"
)

// openStore opens the store named by the global flags. Notices (an index
// rebuilt from files) go to stderr so they never pollute --json output.
func openStore(c *cli.Context) (*anamnesis.Store, error) {
	home, err := anamnesis.ResolveHome(c.String("home"))
	if err != nil {
		return nil, err
	}
	return anamnesis.Open(c.Context, home, anamnesis.Options{
		MachineID: c.String("machine-id"),
		Remote:    os.Getenv("ANAMNESIS_GIT_REMOTE"),
		Notice:    func(s string) { fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", s) },
	})
}

// withStore runs fn with an open store and closes it afterwards.
func withStore(c *cli.Context, fn func(context.Context, *anamnesis.Store) error) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(c.Context, s)
}
