package pgtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Deadlines of waitReady.
const (
	readyTimeout   = time.Minute     // start to the first accepted connection
	connectTimeout = 5 * time.Second // one connection attempt
)

// errPortInUse is wrapped by launch's error when the server could not
// bind its port: another process took it after freePort found it free.
var errPortInUse = errors.New("pgtest: the port is in use")

// waitReady polls until the server accepts a connection to the database
// "postgres", returning an error with the server's output from offset
// from of its log when the server exits first or readyTimeout passes.
// A connection attempt in progress is abandoned when the server exits.
func (s *Server) waitReady(p *process, from int64) error {
	deadline := time.Now().Add(readyTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	exited := func() error {
		out := readLog(s.logPath(), from, 60)
		err := fmt.Errorf("pgtest: the server exited (%v) before accepting connections; its log:\n%s", p.Err(), out)
		if strings.Contains(out, "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return err
	}
	for backoff := 5 * time.Millisecond; ; backoff = min(2*backoff, 100*time.Millisecond) {
		last := s.ping(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-p.Done(): // first: its exit also ends ctx
			return exited()
		default:
		}
		select {
		case <-p.Done():
			return exited()
		case <-ctx.Done():
			return fmt.Errorf("pgtest: the server accepted no connection on %s within %v (last: %v); its log:\n%s",
				s.Addr(), readyTimeout, last, readLog(s.logPath(), from, 60))
		case <-time.After(backoff):
		}
	}
}

// ping connects to the database "postgres" and checks that the server
// answering is this one (its data directory): another process may have
// taken the port, and this server will then exit.
func (s *Server) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	var dir string
	err = conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir)
	if err == nil && dir != s.dataDir() {
		err = fmt.Errorf("pgtest: the server on %s serves %s, not %s", s.Addr(), dir, s.dataDir())
	}
	return errors.Join(err, conn.Close(ctx))
}
