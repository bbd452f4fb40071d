//go:build linux

package pgtest

import (
	"context"
	"testing"
)

// PID is the postmaster's: a session's backend is its child. It is 0
// once the server is stopped, and a new process after Restart.
func TestPIDIsThePostmaster(t *testing.T) {
	srv := Start(t)
	pid := srv.PID()
	if pid <= 0 {
		t.Fatalf("PID of a running server: %d", pid)
	}
	var backend int
	if err := connect(t, srv.DSN("postgres")).QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	if st, ok := procStat(backend); !ok || st.ppid != pid {
		t.Fatalf("the backend %d has parent %d (found %v), want the postmaster %d", backend, st.ppid, ok, pid)
	}
	srv.Restart(t)
	if again := srv.PID(); again <= 0 || again == pid {
		t.Fatalf("PID after Restart: %d, want a new postmaster (was %d)", again, pid)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := srv.PID(); got != 0 {
		t.Fatalf("PID of a stopped server: %d, want 0", got)
	}
}
