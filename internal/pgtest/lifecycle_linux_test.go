//go:build linux

package pgtest

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// exist returns those of pids that exist in /proc, zombies included.
func exist(pids []int) []int {
	var out []int
	for _, p := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); !errors.Is(err, os.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// serverTree is the postmaster's pid followed by those of its descendants.
func serverTree(t *testing.T, srv *Server) []int {
	t.Helper()
	pm := postmaster(t, srv)
	tree := append([]int{pm}, descendants(pm)...)
	if len(tree) < 4 { // checkpointer, background writer, walwriter, ...
		t.Fatalf("the server's processes: %v, want the postmaster and its children", tree)
	}
	return tree
}

// postmaster is the pid of the running server's postmaster.
func postmaster(t *testing.T, srv *Server) int {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.proc == nil {
		t.Fatal("the server is not running")
	}
	return srv.proc.cmd.Process.Pid
}

// refused checks that the server accepts no connection.
func refused(t *testing.T, srv *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, srv.DSN("postgres")); err == nil {
		_ = conn.Close(ctx)
		t.Fatal("the server accepted a connection after it was stopped")
	}
}

// After Stop, with a session open, no process of the server is left, not
// even a zombie; the data directory stays, and Restart serves its data.
func TestStopEndsEveryProcess(t *testing.T) {
	srv := shared.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	execSQL(t, dsn, "CREATE TABLE t (v int)", "INSERT INTO t VALUES (1)")
	var backend int
	if err := connect(t, dsn).QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	tree := serverTree(t, srv)
	if !slices.Contains(tree, backend) {
		t.Fatalf("the backend %d is not among the server's processes %v", backend, tree)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := exist(tree); len(left) > 0 {
		t.Errorf("processes %v of the server %v are left after Stop", left, tree)
	}
	if _, err := os.Stat(srv.dataDir()); err != nil {
		t.Errorf("the data directory after Stop: %v", err)
	}
	refused(t, srv)
	if err := srv.Stop(); err != nil {
		t.Errorf("Stop on a stopped server: %v", err)
	}
	srv.Restart(t)
	if got := queryString(t, dsn, "SELECT v::text FROM t"); got != "1" {
		t.Fatalf("after Stop and Restart: %s, want 1", got)
	}
}

// Restart of a running server keeps the port, the data and the databases.
func TestRestartKeepsData(t *testing.T) {
	srv := shared.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	execSQL(t, dsn, "CREATE TABLE t (v int)", "INSERT INTO t VALUES (2)")
	addr, pm := srv.Addr(), postmaster(t, srv)
	srv.Restart(t)
	if srv.Addr() != addr {
		t.Fatalf("address after Restart: %s, want %s", srv.Addr(), addr)
	}
	if postmaster(t, srv) == pm {
		t.Fatalf("the postmaster %d was not restarted", pm)
	}
	if got := queryString(t, dsn, "SELECT v::text FROM t"); got != "2" {
		t.Fatalf("after Restart: %s, want 2", got)
	}
}

// Kill ends every process at once, as a crash; Restart recovers, keeping
// a transaction committed just before the kill.
func TestKillThenRestartKeepsCommits(t *testing.T) {
	srv := shared.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	execSQL(t, dsn, "CREATE TABLE t (v int)")
	conn := connect(t, dsn)
	for i := range 100 {
		if _, err := conn.Exec(context.Background(), "INSERT INTO t VALUES ($1)", i); err != nil {
			t.Fatal(err)
		}
	}
	tree := serverTree(t, srv)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if live := alive(tree); len(live) > 0 {
		t.Fatalf("processes %v of the server %v run after Kill", live, tree)
	}
	refused(t, srv)
	srv.Restart(t)
	if got := queryString(t, dsn, "SELECT count(*)::text || ' ' || max(v)::text FROM t"); got != "100 99" {
		t.Fatalf("rows after Kill and Restart (count, max): %s, want 100 99", got)
	}
	if log := readLog(srv.logPath(), 0, 1000); !strings.Contains(log, "automatic recovery in progress") {
		t.Errorf("the server log shows no crash recovery:\n%s", log)
	}
}

// A server whose port another process holds exits, and launch says the
// port is in use (a new server then tries another port).
func TestLaunchReportsPortInUse(t *testing.T) {
	srv := shared.Get(t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	defer srv.Restart(t)
	l, err := net.Listen("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv.mu.Lock()
	err = srv.launch()
	srv.mu.Unlock()
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("launch on a port in use: %v, want errPortInUse", err)
	}
}

// The server runs as the OS user "postgres" when the tests run as root
// (initdb and postgres refuse root), else as the current user.
func TestServerUser(t *testing.T) {
	srv := shared.Get(t)
	fi, err := os.Stat("/proc/" + strconv.Itoa(postmaster(t, srv)))
	if err != nil {
		t.Fatal(err)
	}
	want := uint32(os.Geteuid())
	if want == 0 {
		want = srv.owner.cred.Uid
	}
	if got := fi.Sys().(*syscall.Stat_t).Uid; got != want || got == 0 {
		t.Fatalf("the postmaster runs as uid %d, want %d", got, want)
	}
}
