package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// superuser is the role initdb creates and every DSN connects as, with
// trust authentication (no password).
const superuser = "postgres"

// portAttempts is how many free ports a new server tries: a port found
// free can be taken by another process before the server binds it.
const portAttempts = 5

// Server is a PostgreSQL server in a temporary directory, listening on
// 127.0.0.1. Its methods may be called from several goroutines.
type Server struct {
	bins  binaries
	owner owner
	dir   string // temporary directory: data/, server.log, the Unix socket
	port  int    // fixed for the server's life, Restart included

	dbs atomic.Int64 // databases created, numbering their names

	mu   sync.Mutex // serialises Stop, Kill, Restart and close
	proc *process   // the running postmaster; nil while stopped
}

// Start starts a server for one test and stops it, removing its data, when
// the test ends. Without PostgreSQL binaries it skips the test, or fails
// it when the environment variable SLUICE_REQUIRE_POSTGRES is set (see
// RequireEnv); any other failure to start fails the test with the
// server's log. When the test fails, the end of the server's log is
// logged. To share one server among a package's tests, use Shared.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := start()
	if err != nil {
		skipOrFail(tb, err)
		return nil
	}
	tb.Cleanup(func() {
		if err := s.close(); err != nil {
			tb.Error(err)
		}
	})
	logOnFailure(tb, s)
	return s
}

// StartMain starts a server outside of any test, for a TestMain, and
// returns it with the function that stops it and removes its data. When
// PostgreSQL is missing, the error wraps ErrNotInstalled; the caller
// decides whether that skips or fails (see RequireEnv). Shared does this
// for a package's tests, starting the server only when a test needs it.
func StartMain() (*Server, func() error, error) {
	s, err := start()
	if err != nil {
		return nil, func() error { return nil }, err
	}
	return s, s.close, nil
}

// start finds the binaries, runs initdb in a fresh temporary directory
// and starts the server on a free port.
func start() (*Server, error) {
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	own, err := serverOwner()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{bins: bins, owner: own, dir: dir}
	if err := s.setup(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// setup gives the directory to the owner, runs initdb and starts the
// server, trying another port when the one found free was taken.
func (s *Server) setup() error {
	if err := s.owner.chown(s.dir); err != nil {
		return fmt.Errorf("pgtest: give %s to the user %q: %w", s.dir, serverUser, err)
	}
	if err := s.initdb(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for range portAttempts {
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.launch(); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

// Addr is the server's address, 127.0.0.1:<port>; it stays the same
// across Restart.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// dataDir is the server's data directory (PGDATA).
func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// logPath is the file the server's output goes to, across restarts.
func (s *Server) logPath() string { return filepath.Join(s.dir, "server.log") }

// close stops the server and removes its directory.
func (s *Server) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.stopLocked()
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("pgtest: %w", rmErr))
	}
	return err
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
