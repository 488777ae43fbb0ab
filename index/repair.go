package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"modernc.org/sqlite"
)

// IntegrityCheck runs SQLite's quick_check over every page and table of
// the file and returns each problem it names (at most 100); an empty list
// means no damage was found. quick_check finds what a torn write or a bad
// disk leaves (malformed pages, broken b-trees) in linear time; the full
// integrity_check also cross-checks every index entry and costs about as
// much at 10,000 notes but grows faster. A check that stops at damage
// returns it as an error.
func (ix *Index) IntegrityCheck(ctx context.Context) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `PRAGMA quick_check(100)`)
	if err != nil {
		return nil, ix.wrap("check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return problems, ix.wrap("check", err)
		}
		if m != "ok" {
			problems = append(problems, m)
		}
	}
	if err := rows.Err(); err != nil {
		return problems, ix.wrap("check", err)
	}
	return problems, nil
}

// restorer is what modernc's connection offers for SQLite's backup API.
type restorer interface {
	NewRestore(srcURI string) (*sqlite.Backup, error)
}

// Replace overwrites the database at dst with the one at src, page by
// page in one SQLite write transaction (the backup API). It is how a
// damaged index is swapped for a rebuilt one: every open connection to
// dst, in this process or another, sees the new content at its next
// statement, as after any other write, whereas deleting the file would
// leave them writing into an unlinked copy. It needs only dst's header
// to be intact; a file that is not a database at all fails with
// ErrCorrupt. busy bounds the wait for dst's write lock.
func Replace(ctx context.Context, dst, src string, busy time.Duration) error {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: dst}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("open index %s: %w", dst, err)
	}
	defer db.Close()
	ix := &Index{path: dst, busy: busy}
	conn, err := db.Conn(ctx)
	if err != nil {
		return ix.wrap("open", err)
	}
	defer conn.Close()
	deadline := time.Now().Add(busy)
	for {
		err = conn.Raw(func(dc any) error {
			r, ok := dc.(restorer)
			if !ok {
				return fmt.Errorf("the SQLite driver has no backup API")
			}
			b, err := r.NewRestore(src)
			if err != nil {
				return err
			}
			if _, err := b.Step(-1); err != nil {
				b.Finish()
				return err
			}
			return b.Finish()
		})
		if err == nil {
			return nil
		}
		err = ix.wrap("replace", err)
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}
