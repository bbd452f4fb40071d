package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/pgtest"
	"github.com/sluice-go/sluice/sink/postgres"
)

// runError runs a member of cfg on db with three records and returns the
// error that stopped Run, failing the test unless it is marked permanent
// (it stopped Run without retries).
func runError(t *testing.T, db postgres.DB, cfg postgres.Config) error {
	t.Helper()
	m := startMember(t, db, cfg)
	must(t, m.fake.Send(topic, 0, values(0, 3)...))
	if err := m.fake.Assign(topic, 0); err != nil {
		return err // the claim failed (exactly once)
	}
	err := m.run.Wait(t)
	if err == nil || !sluice.IsPermanent(err) || strings.Contains(err.Error(), "failed after") {
		t.Fatalf("Run returned %v; want an error marked permanent, not retried", err)
	}
	return err
}

func wantIn(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %s", err, p)
		}
	}
}

// What cannot work stops Run with an error naming it: a missing table or
// column, a missing database, bad credentials.
func TestUnusableSinkStopsRun(t *testing.T) {
	t.Run("missing table", func(t *testing.T) {
		db := newDB(t)
		cfg := config(false)
		cfg.Table = "nope"
		wantIn(t, runError(t, db, cfg), `"nope"`, "42P01")
	})
	t.Run("missing column", func(t *testing.T) {
		db := newDB(t, rowsDDL)
		cfg := config(false)
		cfg.Columns = []string{"n", "nope"}
		wantIn(t, runError(t, db, cfg), `"nope"`, `"rows"`, "42703")
	})
	t.Run("missing column upsert", func(t *testing.T) {
		db := newDB(t, keyedDDL)
		cfg := config(false)
		cfg.Columns, cfg.Conflict = []string{"n", "nope"}, []string{"n"}
		wantIn(t, runError(t, db, cfg), `"nope"`, `"rows"`, "42703")
	})
	t.Run("missing database", func(t *testing.T) {
		srv := pg.Get(t)
		db := lazyPool(t, srv.DSN("nope"))
		wantIn(t, runError(t, db, config(false)), `"nope"`, "3D000")
	})
	for _, eos := range []bool{false, true} {
		t.Run(map[bool]string{false: "bad password", true: "bad password exactly once"}[eos], func(t *testing.T) {
			dsn, _ := newDatabase(t)
			role := requirePassword(t, pg.Get(t), "right")
			u, err := url.Parse(dsn)
			must(t, err)
			u.User = url.UserPassword(role, "wrong")
			err = runError(t, lazyPool(t, u.String()), config(eos))
			wantIn(t, err, fmt.Sprintf("%q", role), "28P01")
			if !sluice.IsPermanent(err) {
				t.Fatalf("error %v is not marked permanent", err)
			}
		})
	}
}

// lazyPool is a pool to dsn that connects when first used.
func lazyPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	must(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// requirePassword creates a role with password that must authenticate
// with it over TCP (the server trusts every other connection: a line
// for the role goes first in pg_hba.conf), and returns its name. The
// role and the line go when the test ends.
func requirePassword(t *testing.T, srv *pgtest.Server, password string) string {
	t.Helper()
	ctx := context.Background()
	role := "sluice_" + strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	admin := srv.Pool(t, srv.DSN("postgres"))
	exec(t, admin, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", pgx.Identifier{role}.Sanitize(), password))
	var hba string
	must(t, admin.QueryRow(ctx, "SHOW hba_file").Scan(&hba))
	old, err := os.ReadFile(hba)
	must(t, err)
	line := fmt.Sprintf("host all %s 127.0.0.1/32 scram-sha-256\n", role)
	must(t, os.WriteFile(hba, append([]byte(line), old...), 0))
	exec(t, admin, "SELECT pg_reload_conf()")
	t.Cleanup(func() {
		must(t, os.WriteFile(hba, old, 0))
		exec(t, admin, "SELECT pg_reload_conf()")
		exec(t, admin, "DROP ROLE "+pgx.Identifier{role}.Sanitize())
	})
	// The server reloads pg_hba.conf on its own time: wait until it asks
	// the role for its password.
	u, err := url.Parse(srv.DSN("postgres"))
	must(t, err)
	u.User = url.User(role)
	poll(t, "the server asks "+role+" for a password", func() bool {
		conn, err := pgx.Connect(ctx, u.String())
		if err == nil {
			_ = conn.Close(ctx)
			return false
		}
		return true
	})
	return role
}

// classify marks each SQLSTATE class as package postgres documents.
func TestClassify(t *testing.T) {
	pgErr := func(code string) error {
		return fmt.Errorf("write into %q: %w", "rows", &pgconn.PgError{Code: code, Message: "m"})
	}
	const (
		invalid   = "invalid"
		permanent = "permanent"
		transient = "transient"
	)
	for _, c := range []struct {
		code string
		want string
	}{
		{"22001", invalid}, {"22003", invalid}, {"22P02", invalid},
		{"23502", invalid}, {"23503", invalid}, {"23505", invalid}, {"23514", invalid},
		{"28000", permanent}, {"28P01", permanent},
		{"3D000", permanent},
		{"42501", permanent}, {"42601", permanent}, {"42703", permanent}, {"42P01", permanent},
		{"0A000", permanent},
		{"08000", transient}, {"08006", transient},
		{"40001", transient}, {"40P01", transient},
		{"53100", transient}, {"53300", transient},
		{"55P03", transient},
		{"57014", transient}, {"57P01", transient}, {"57P02", transient}, {"57P03", transient},
		{"XX000", transient},
	} {
		err := postgres.Classify(pgErr(c.code))
		got := transient
		switch {
		case sluice.IsInvalid(err):
			got = invalid
		case sluice.IsPermanent(err):
			got = permanent
		}
		if got != c.want {
			t.Errorf("SQLSTATE %s classified %s; want %s", c.code, got, c.want)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(err.Error(), `"rows"`) {
			t.Errorf("SQLSTATE %s: classified error %v lost the original", c.code, err)
		}
	}
	for _, err := range []error{errors.New("no SQLSTATE"), context.Canceled, context.DeadlineExceeded,
		fmt.Errorf("commit: %w", context.Canceled), nil} {
		got := postgres.Classify(err)
		if got != err || sluice.IsInvalid(got) || sluice.IsPermanent(got) {
			t.Errorf("Classify(%v) = %v; want it unmarked", err, got)
		}
	}
}
