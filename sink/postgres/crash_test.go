package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/pgtest"
	"github.com/sluice-go/sluice/pipeline"
)

// blockDDL makes every insert into rows wait while another session holds
// the advisory lock blockKey, so that a test can hold a batch's
// transaction in the middle of its write.
const (
	blockKey = 4242
	blockDDL = `CREATE FUNCTION block() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
CREATE TRIGGER block BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION block()`
)

// A server crash is a transient error: the batch being written when it
// comes, and the batches written while the server is down, are retried
// on new connections once it is back, and each row is in the table once.
func TestServerCrashIsRetried(t *testing.T) {
	srv := pg.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	db := srv.Pool(t, dsn)
	exec(t, db, rowsDDL)
	exec(t, db, blockDDL)
	retry := pipeline.WithRetry(sluice.RetryPolicy{Attempts: 100, Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond})
	m := startMember(t, db, config(true), retry)
	must(t, m.fake.Send(topic, 0, values(0, 10)...))
	must(t, m.fake.Assign(topic, 0))
	m.fake.WaitCommitted(t, topic, 0, 10)

	// A crash while a batch is written: its transaction waits in the
	// trigger for the lock this test holds.
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer holder.Close(ctx)
	_, err = holder.Exec(ctx, "SELECT pg_advisory_lock($1)", blockKey)
	must(t, err)
	must(t, m.fake.Send(topic, 0, values(10, 10)...))
	poll(t, "an insert waiting for the advisory lock", func() bool {
		var n int
		err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n)
		return err == nil && n > 0
	})
	must(t, srv.Kill())
	srv.Restart(t)
	m.fake.WaitCommitted(t, topic, 0, 20)

	// A crash between batches: the next batches find the server down.
	must(t, srv.Kill())
	must(t, m.fake.Send(topic, 0, values(20, 10)...))
	srv.Restart(t)
	m.fake.WaitCommitted(t, topic, 0, 30)
	must(t, m.run.Stop(t))
	sameInts(t, "rows", intsAfterRestart(t, dsn), seq(0, 30))
}

// intsAfterRestart is ints on a new connection: the pools' connections
// to the server before its restart fail when next used.
func intsAfterRestart(t *testing.T, dsn string) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT n FROM rows ORDER BY n`)
	must(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int])
	must(t, err)
	return out
}

// A commit that completes on the server while the connection drops (its
// reply lost): the Writer reads the position back, finds the batch
// committed and does not write it again. The commit waits for a
// synchronous standby that does not exist, and its session is then
// terminated: the transaction has committed locally, and the client gets
// an error instead of the commit's reply.
func TestCommitReplyLostIsNotWrittenTwice(t *testing.T) {
	ctx := context.Background()
	srv := pg.Get(t)
	db := srv.Pool(t, srv.CreateDatabase(t, t.Name()))
	exec(t, db, rowsDDL)
	readBack := newLogWatch("the batch committed")
	cfg := config(true)
	cfg.Logger = readBack.Logger()
	retry := pipeline.WithRetry(sluice.RetryPolicy{Attempts: 100, Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond})
	m := startMember(t, db, cfg, retry)
	must(t, m.fake.Send(topic, 0, values(0, 4)...))
	must(t, m.fake.Assign(topic, 0))
	m.fake.WaitCommitted(t, topic, 0, 4)

	syncStandby(t, srv, "nobody")
	t.Cleanup(func() { syncStandby(t, srv, "") })
	must(t, m.fake.Send(topic, 0, values(4, 4)...))
	var pid int
	poll(t, "a commit waiting for the synchronous standby", func() bool {
		err := db.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND wait_event = 'SyncRep'`).Scan(&pid)
		return err == nil
	})
	exec(t, db, "SELECT pg_terminate_backend($1)", pid)
	syncStandby(t, srv, "") // the Writer's locking read waits for the standby too
	m.fake.WaitCommitted(t, topic, 0, 8)
	readBack.wait(t)
	must(t, m.run.Stop(t))
	sameInts(t, "rows", ints(t, db), seq(0, 8))
}

// syncStandby sets synchronous_standby_names on the server and returns
// once commits follow it: with a name no standby has, every commit that
// wrote something waits until it is reset or its session ends. A new
// session sees the setting at once (a session that existed takes it
// before its next statement), but a commit waits for a standby only once
// the checkpointer took the setting too (it keeps, for every backend,
// whether synchronous standbys are defined): with a name, syncStandby
// also waits until a probe commit waits for the standby.
func syncStandby(t *testing.T, srv *pgtest.Server, names string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", names))
	must(t, err)
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	must(t, err)
	poll(t, "synchronous_standby_names = '"+names+"' in a new session", func() bool {
		fresh, err := pgx.Connect(ctx, srv.DSN("postgres"))
		if err != nil {
			return false
		}
		defer fresh.Close(ctx)
		var got string
		return fresh.QueryRow(ctx, "SHOW synchronous_standby_names").Scan(&got) == nil && got == names
	})
	if names != "" {
		poll(t, "a probe commit waiting for the synchronous standby", func() bool { return commitWaits(t, srv, conn) })
	}
}

// commitWaits commits a probe transaction that writes to the WAL (a
// transactional logical decoding message; one that only takes a
// transaction ID does not wait), in a session of its own, and reports
// whether the commit waited for a synchronous standby; a wait is
// cancelled through admin (the probe stays committed locally).
func commitWaits(t *testing.T, srv *pgtest.Server, admin *pgx.Conn) bool {
	t.Helper()
	ctx := context.Background()
	probe, err := pgx.Connect(ctx, srv.DSN("postgres"))
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
