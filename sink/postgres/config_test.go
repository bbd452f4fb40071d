package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice/sink/postgres"
)

// nopDB is a DB that is never used: New checks the Config only.
type nopDB struct{}

func (nopDB) Begin(context.Context) (pgx.Tx, error) { return nil, errors.New("nopDB") }
func (nopDB) QueryRow(context.Context, string, ...any) pgx.Row {
	return nil
}

// New refuses a bad Config with an error naming the field.
func TestConfigErrorsNameTheField(t *testing.T) {
	ok := func() postgres.Config { return postgres.Config{Table: "t", Columns: []string{"a", "b"}} }
	for _, c := range []struct {
		field string
		edit  func(*postgres.Config)
	}{
		{"Config.Table", func(c *postgres.Config) { c.Table = " " }},
		{"Config.Columns", func(c *postgres.Config) { c.Columns = nil }},
		{"Config.Columns[1]", func(c *postgres.Config) { c.Columns[1] = "" }},
		{`Config.Columns names "a" twice`, func(c *postgres.Config) { c.Columns[1] = "a" }},
		{`Config.Conflict[0] "x"`, func(c *postgres.Config) { c.Conflict = []string{"x"} }},
		{"Config.Update", func(c *postgres.Config) { c.Update = []string{"a"} }},
		{`Config.Update[0] "x"`, func(c *postgres.Config) { c.Conflict, c.Update = []string{"a"}, []string{"x"} }},
		{"Config.OffsetsTable", func(c *postgres.Config) { c.OffsetsTable = "o" }},
		{"Config.CreateOffsetsTable", func(c *postgres.Config) { c.CreateOffsetsTable = true }},
		{"Config.BatchSize", func(c *postgres.Config) { c.BatchSize = -1 }},
		{"Config.BatchBytes", func(c *postgres.Config) { c.BatchBytes = -1 }},
		{"Config.Linger", func(c *postgres.Config) { c.Linger = -time.Second }},
	} {
		cfg := ok()
		c.edit(&cfg)
		w, err := postgres.New(nopDB{}, cfg)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("New with a bad %s returned %v, %v; want an error naming it", c.field, w, err)
		}
	}
	if _, err := postgres.New(nil, ok()); err == nil || !strings.Contains(err.Error(), "db") {
		t.Errorf("New with a nil db returned %v; want an error naming it", err)
	}
	if _, err := postgres.New(nopDB{}, ok()); err != nil {
		t.Errorf("New with a good Config returned %v", err)
	}
}
