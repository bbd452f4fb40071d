package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A commit that completes on the server while the connection drops (its
// reply lost): the Writer reads the position back, finds the batch
// committed and does not write it again. The commit waits for a
// synchronous standby that does not exist, and its session is then
// terminated: the transaction has committed locally, and the client gets
// an error instead of the commit's reply.
func TestCommitReplyLostIsNotWrittenTwice(t *testing.T) {
	readBack := newLogWatch("the batch committed")
	cfg := config(true)
	cfg.Logger = readBack.Logger()
	_, db, m := startCommitted(t, cfg)

	pid := waitSyncRep(t, db, func() { must(t, m.fake.Send(topic, 0, values(4, 4)...)) })
	exec(t, db, "SELECT pg_terminate_backend($1)", pid)
	syncStandby(t, "") // the Writer's locking read waits for the standby too
	m.finish(t, 8)
	readBack.wait(t)
	sameInts(t, "rows", ints(t, db), seq(0, 8))
}

// The server is killed while a COMMIT waits for a synchronous standby:
// the commit is durable locally (it survives the crash) but its reply is
// lost, and the read-back fails while the server is down. Once it is
// back, the batch is found committed, not written again.
func TestCommitReplyLostToAKillIsNotWrittenTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server")
	}
	dsn, db, m := startCommitted(t, config(true))
	waitSyncRep(t, db, func() { must(t, m.fake.Send(topic, 0, values(4, 4)...)) })
	// Reset the setting for the restarted server, without a reload: the
	// waiting commit keeps waiting until the kill.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.Get(t).DSN("postgres"))
	must(t, err)
	_, err = conn.Exec(ctx, "ALTER SYSTEM RESET synchronous_standby_names")
	must(t, err)
	_ = conn.Close(ctx)
	killAndRestart(t)
	m.finishAfterRestart(t, dsn, 8)
}

// waitSyncRep makes commits wait for a synchronous standby that does not
// exist (until the test ends), calls write, and returns the pid of the
// session whose commit then waits for the standby.
func waitSyncRep(t *testing.T, db *pgxpool.Pool, write func()) int {
	t.Helper()
	syncStandby(t, "nobody")
	t.Cleanup(func() { syncStandby(t, "") })
	write()
	var pid int
	poll(t, "a commit waiting for the synchronous standby", func() bool {
		return db.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND wait_event = 'SyncRep'`).Scan(&pid) == nil
	})
	return pid
}

// syncStandby sets synchronous_standby_names on the server and returns
// once commits follow it: with a name no standby has, every commit that
// wrote something waits until it is reset or its session ends. A new
// session sees the setting at once (a session that existed takes it
// before its next statement), but a commit waits for a standby only once
// the checkpointer took the setting too (it keeps, for every backend,
// whether synchronous standbys are defined): with a name, syncStandby
// also waits until a probe commit waits for the standby.
func syncStandby(t *testing.T, names string) {
	t.Helper()
	ctx := context.Background()
	dsn := pg.Get(t).DSN("postgres")
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", names))
	must(t, err)
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	must(t, err)
	poll(t, "synchronous_standby_names = '"+names+"' in a new session", func() bool {
		fresh, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return false
		}
		defer fresh.Close(ctx)
		var got string
		return fresh.QueryRow(ctx, "SHOW synchronous_standby_names").Scan(&got) == nil && got == names
	})
	if names != "" {
		poll(t, "a probe commit waiting for the synchronous standby", func() bool { return commitWaits(t, dsn, conn) })
	}
}

// commitWaits commits a probe transaction that writes to the WAL (a
// transactional logical decoding message; one that only takes a
// transaction ID does not wait), in a session of its own, and reports
// whether the commit waited for a synchronous standby; a wait is
// cancelled through admin (the probe stays committed locally).
func commitWaits(t *testing.T, dsn string, admin *pgx.Conn) bool {
	t.Helper()
	ctx := context.Background()
	probe, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer probe.Close(ctx)
	var pid int
	must(t, probe.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	done := make(chan error, 1)
	go func() {
		_, err := probe.Exec(ctx, "SELECT pg_logical_emit_message(true, 'sluice-test', 'probe')")
		done <- err
	}()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			must(t, err)
			return false // committed without waiting
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("the probe commit neither finished nor waited for the standby within %v", waitLimit)
		}
		var waiting bool
		must(t, admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE pid = $1 AND wait_event = 'SyncRep')`, pid).Scan(&waiting))
		if waiting {
			_, err := admin.Exec(ctx, "SELECT pg_cancel_backend($1)", pid)
			must(t, err)
			must(t, <-done)
			return true
		}
	}
}
