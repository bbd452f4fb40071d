package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// A source with a transactional producer bound refuses to run with
// isolation.level=read_uncommitted, naming the override: its rewinds
// would read committed offsets without require_stable_offsets (a stale
// one while the last transaction's markers are written: duplicates).
// read_committed, librdkafka's default, passes the check (Run then fails
// at InitTransactions: there is no broker).
func TestExactlyOnceRefusesReadUncommitted(t *testing.T) {
	for _, tc := range []struct {
		level   string
		refused bool
	}{{"read_uncommitted", true}, {"read_committed", false}} {
		t.Run(tc.level, func(t *testing.T) {
			src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"in"}},
				Overrides: map[string]any{"isolation.level": tc.level}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t", "log_level": 0})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if err := src.txn.Bind(exactlyonce.Binding[*kafka.Producer]{Producer: p, Config: exactlyonce.Config{CommitTimeout: 100 * time.Millisecond}}); err != nil {
				t.Fatal(err)
			}
			err = src.Run(context.Background(), newFakeGroup())
			if got := err != nil && strings.Contains(err.Error(), `Config.Overrides["isolation.level"]`); got != tc.refused {
				t.Fatalf("Run = %v; refused naming the override: %v, want %v", err, got, tc.refused)
			}
		})
	}
}

// A transaction's offsets refused because the membership moved on are
// marked ErrGroupMoved (the exactly-once shutdown then aborts without
// failing Run); other errors, and fatal ones, are not.
func TestTxnRefusedByAMovedGroupIsErrGroupMoved(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kafka.NewError(kafka.ErrIllegalGeneration, "Failed to commit offsets to transaction", false), true},
		{kafka.NewError(kafka.ErrUnknownMemberID, "x", false), true},
		{kafka.NewError(kafka.ErrRebalanceInProgress, "x", false), true},
		{kafka.NewError(kafka.ErrFencedInstanceID, "x", false), true},
		{kafka.NewError(kafka.ErrFencedMemberEpoch, "x", false), true},
		{kafka.NewError(kafka.ErrIllegalGeneration, "x", true), false}, // fatal: ErrFatal wins
		{kafka.NewError(kafka.ErrCoordinatorNotAvailable, "x", false), false},
		{errors.New("other"), false},
	} {
		err := groupMovedTxn(fatalTxn(fmt.Errorf("sending the offsets to the transaction: %w", tc.err)))
		if got := errors.Is(err, exactlyonce.ErrGroupMoved); got != tc.want {
			t.Errorf("%v: ErrGroupMoved %v, want %v", tc.err, got, tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v: the cause is not wrapped: %v", tc.err, err)
		}
	}
}
