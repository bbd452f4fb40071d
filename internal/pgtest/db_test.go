package pgtest

import (
	"context"
	"testing"
)

// Two databases created with the same name are distinct: a table made in
// one does not exist in the other.
func TestCreateDatabaseIsolates(t *testing.T) {
	srv := shared.Get(t)
	a, b := srv.CreateDatabase(t, "iso"), srv.CreateDatabase(t, "iso")
	if a == b {
		t.Fatalf("the same DSN twice: %s", a)
	}
	execSQL(t, a, "CREATE TABLE t (v int)", "INSERT INTO t VALUES (7)")
	if got := queryString(t, a, "SELECT v::text FROM t"); got != "7" {
		t.Fatalf("SELECT v FROM t on %s: %s, want 7", a, got)
	}
	if got := queryString(t, b, "SELECT coalesce(to_regclass('public.t')::text, 'none')"); got != "none" {
		t.Fatalf("table t exists in %s: %s", b, got)
	}
	for _, dsn := range []string{a, b} {
		if got, want := queryString(t, dsn, "SELECT current_database()"), dbOf(t, dsn); got != want {
			t.Fatalf("current_database() on %s: %s, want %s", dsn, got, want)
		}
	}
}

// A database is dropped when the test that created it ends.
func TestCreateDatabaseDroppedAtCleanup(t *testing.T) {
	srv := shared.Get(t)
	var db string
	t.Run("create", func(t *testing.T) {
		db = dbOf(t, srv.CreateDatabase(t, t.Name()))
		execSQL(t, srv.DSN(db), "CREATE TABLE t (v int)")
	})
	var n int
	err := connect(t, srv.DSN("postgres")).QueryRow(context.Background(),
		"SELECT count(*) FROM pg_database WHERE datname = $1", db).Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("databases named %q after the test ended: %d (%v), want 0", db, n, err)
	}
}

// Pool connects to the database of the DSN.
func TestPool(t *testing.T) {
	srv := shared.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	var db string
	if err := srv.Pool(t, dsn).QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if want := dbOf(t, dsn); db != want {
		t.Fatalf("current_database() through the pool: %s, want %s", db, want)
	}
}

// The server runs with the settings the package documents.
func TestServerSettings(t *testing.T) {
	srv := shared.Get(t)
	for setting, want := range map[string]string{
		"listen_addresses":   "127.0.0.1",
		"fsync":              "off",
		"full_page_writes":   "off",
		"synchronous_commit": "on",
		"max_connections":    "100",
		"server_encoding":    "UTF8",
	} {
		if got := queryString(t, srv.DSN("postgres"), "SHOW "+setting); got != want {
			t.Errorf("SHOW %s: %s, want %s", setting, got, want)
		}
	}
	if got := queryString(t, srv.DSN("postgres"), "SELECT current_user"); got != superuser {
		t.Errorf("current_user: %s, want %s", got, superuser)
	}
}

func TestDBName(t *testing.T) {
	for name, want := range map[string]string{
		"TestX/sub-test": "testx_sub_test",
		"":               "db_",
		"9lives":         "db_9lives",
		"ok_1":           "ok_1",
		"Ünïcode":        "db__n_code",
		"a234567890123456789012345678901234567890xyz": "a234567890123456789012345678901234567890",
	} {
		if got := dbName(name); got != want {
			t.Errorf("dbName(%q) = %q, want %q", name, got, want)
		}
	}
}
