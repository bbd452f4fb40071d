package pgtest

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is one server for all the tests of a package, started by the
// first test that calls Get and stopped by Stop (StopAfter in TestMain):
//
//	var pg pgtest.Shared
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.StopAfter(m)) }
//
//	func TestX(t *testing.T) {
//		dsn := pg.Get(t).CreateDatabase(t, t.Name())
//		...
//	}
//
// The zero value is ready. Tests that Stop, Kill or Restart the server
// affect every test using it at the same time: a test that simulates a
// crash while other tests run in parallel starts its own server (Start).
type Shared struct {
	mu      sync.Mutex
	started bool // start was tried, or Stop was called
	srv     *Server
	err     error // start's error
}

// errSharedStopped is Get's error after Stop.
var errSharedStopped = fmt.Errorf("pgtest: the shared server was stopped")

// Get returns the shared server, starting it on the first call. Without
// PostgreSQL binaries it skips the test, or fails it when
// SLUICE_REQUIRE_POSTGRES is set, as Start does; any other failure to
// start fails this and every later test that calls Get. When the test
// fails, the end of the server's log is logged.
func (sh *Shared) Get(tb testing.TB) *Server {
	tb.Helper()
	sh.mu.Lock()
	if !sh.started {
		sh.started = true
		sh.srv, sh.err = start()
	}
	srv, err := sh.srv, sh.err
	sh.mu.Unlock()
	if err != nil {
		skipOrFail(tb, err)
		return nil
	}
	logOnFailure(tb, srv)
	return srv
}

// Stop stops the shared server, if it was started, and removes its data;
// a later Get fails. Call it after the tests ran, before checking for
// leaked goroutines: StopAfter does both in order.
func (sh *Shared) Stop() error {
	sh.mu.Lock()
	srv := sh.srv
	sh.started, sh.srv, sh.err = true, nil, errSharedStopped
	sh.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.close()
}

// Runner runs a package's tests and returns the exit code; *testing.M is
// one, and goleak.VerifyTestMain takes one.
type Runner interface{ Run() int }

// StopAfter returns a Runner that runs m and then stops the shared
// server; when Stop fails, it prints the error and the exit code is 1.
func (sh *Shared) StopAfter(m Runner) Runner {
	return runnerFunc(func() int {
		code := m.Run()
		if err := sh.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		return code
	})
}

// runnerFunc is a function as a Runner.
type runnerFunc func() int

// Run calls f.
func (f runnerFunc) Run() int { return f() }
