package postgres_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/internal/pgtest"
)

// pg is the package's one PostgreSQL server; each test gets a database of
// its own (newDB). Tests run one at a time: some kill and restart it.
var pg pgtest.Shared

func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.StopAfter(m)) }
