package postgres

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice/sink/txsink"
)

// DefaultOffsetsTable is the offsets table of exactly-once mode when
// Config.OffsetsTable is empty.
const DefaultOffsetsTable = "sluice_offsets"

// Config configures a PostgreSQL sink. Table and Columns are required.
type Config struct {
	// Table is the table rows are written to, optionally schema-qualified
	// ("events", "analytics.events"). It must exist. Names here and in
	// the other fields are quoted, so they are case-sensitive: "Events"
	// is not the table events.
	Table string
	// Columns are the table's columns a Row fills, in Row order.
	Columns []string

	// Conflict, when not empty, turns inserts into upserts: the columns of
	// a unique index or primary key; a row whose key exists updates the
	// existing row's Update columns (INSERT ... ON CONFLICT (Conflict) DO
	// UPDATE). Empty: plain inserts through COPY, the fastest way in.
	Conflict []string
	// Update are the columns an upsert overwrites; empty means every
	// column of Columns not in Conflict. Only with Conflict.
	Update []string

	// ExactlyOnce stores each partition's position in OffsetsTable, in
	// the transaction of its rows, and makes the sink the source's offset
	// store (set the source's Config.OffsetStore to the returned Writer).
	// See the package documentation.
	ExactlyOnce bool
	// OffsetsTable is the offsets table of exactly-once mode, optionally
	// schema-qualified; empty means DefaultOffsetsTable. See OffsetsDDL.
	OffsetsTable string
	// CreateOffsetsTable creates OffsetsTable when it does not exist
	// (OffsetsDDL's statement, at the first claim; the role then needs
	// the CREATE privilege on its schema). False: it must exist, and a
	// claim fails naming it and OffsetsDDL. Only with ExactlyOnce.
	CreateOffsetsTable bool

	// BatchSize, BatchBytes and Linger bound a batch (one transaction): the
	// most rows, the most bytes (as estimated from the Row's values), the
	// longest a row waits. Zero: 500 rows, no byte cap, 100ms.
	BatchSize  int
	BatchBytes int
	Linger     time.Duration

	// Name names the sink's stages in errors, logs and dead letters;
	// empty means "postgres <Table>".
	Name string
	// Logger receives the sink's events; nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) check() error {
	if strings.TrimSpace(c.Table) == "" {
		return fmt.Errorf("postgres: Config.Table is empty")
	}
	if len(c.Columns) == 0 {
		return fmt.Errorf("postgres: Config.Columns is empty (table %q)", c.Table)
	}
	seen := map[string]bool{}
	for i, col := range c.Columns {
		if strings.TrimSpace(col) == "" {
			return fmt.Errorf("postgres: Config.Columns[%d] is empty (table %q)", i, c.Table)
		}
		if seen[col] {
			return fmt.Errorf("postgres: Config.Columns names %q twice (table %q)", col, c.Table)
		}
		seen[col] = true
	}
	for i, col := range c.Conflict {
		if !seen[col] {
			return fmt.Errorf("postgres: Config.Conflict[%d] %q is not one of Config.Columns (table %q)", i, col, c.Table)
		}
	}
	if len(c.Update) > 0 && len(c.Conflict) == 0 {
		return fmt.Errorf("postgres: Config.Update is set without Config.Conflict (table %q)", c.Table)
	}
	for i, col := range c.Update {
		if !seen[col] {
			return fmt.Errorf("postgres: Config.Update[%d] %q is not one of Config.Columns (table %q)", i, col, c.Table)
		}
	}
	if c.OffsetsTable != "" && !c.ExactlyOnce {
		return fmt.Errorf("postgres: Config.OffsetsTable is set without Config.ExactlyOnce (table %q)", c.Table)
	}
	if c.CreateOffsetsTable && !c.ExactlyOnce {
		return fmt.Errorf("postgres: Config.CreateOffsetsTable is set without Config.ExactlyOnce (table %q)", c.Table)
	}
	switch {
	case c.BatchSize < 0:
		return fmt.Errorf("postgres: Config.BatchSize is %d; want 0 (the default, %d) or more (table %q)", c.BatchSize, txsink.DefaultBatchSize, c.Table)
	case c.BatchBytes < 0:
		return fmt.Errorf("postgres: Config.BatchBytes is %d; want 0 (no cap) or more (table %q)", c.BatchBytes, c.Table)
	case c.Linger < 0:
		return fmt.Errorf("postgres: Config.Linger is %v; want 0 (the default, %v) or more (table %q)", c.Linger, txsink.DefaultLinger, c.Table)
	}
	if c.OffsetsTable == "" {
		c.OffsetsTable = DefaultOffsetsTable
	}
	if c.Name == "" {
		c.Name = "postgres " + c.Table
	}
	return nil
}

// ident quotes a possibly schema-qualified name.
func ident(name string) pgx.Identifier {
	return pgx.Identifier(strings.Split(name, "."))
}
