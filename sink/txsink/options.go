package txsink

import (
	"fmt"
	"log/slog"
	"time"
)

// Default batch limits, for the Options fields left zero.
const (
	DefaultBatchSize = 500
	DefaultLinger    = 100 * time.Millisecond
)

// Options configure a [Writer].
type Options[T any] struct {
	// Name names the Writer's stages in errors, logs and dead letters
	// ("txsink" when empty; package postgres uses "postgres <table>").
	Name string
	// ExactlyOnce stores each partition's position in the store, in the
	// transaction of its rows, and makes the Writer the source's offset
	// store (see the package documentation). False: at least once.
	ExactlyOnce bool
	// BatchSize is the most values in one transaction; zero means
	// DefaultBatchSize.
	BatchSize int
	// BatchBytes, with Weigh, caps a batch's summed weight; zero means
	// no cap.
	BatchBytes int
	// Weigh returns a value's weight for BatchBytes (its size in bytes,
	// roughly); nil weighs nothing.
	Weigh func(T) int
	// Linger is the longest a value waits for its batch to fill; zero
	// means DefaultLinger.
	Linger time.Duration
	// Logger receives the Writer's events (a fenced partition, a commit
	// whose outcome was read back). Nil means slog.Default().
	Logger *slog.Logger
}

func (o *Options[T]) check() error {
	switch {
	case o.BatchSize < 0:
		return fmt.Errorf("Options.BatchSize is %d; want 0 (the default, %d) or more", o.BatchSize, DefaultBatchSize)
	case o.BatchBytes < 0:
		return fmt.Errorf("Options.BatchBytes is %d; want 0 (no cap) or more", o.BatchBytes)
	case o.BatchBytes > 0 && o.Weigh == nil:
		return fmt.Errorf("Options.BatchBytes is %d but Options.Weigh is nil", o.BatchBytes)
	case o.Linger < 0:
		return fmt.Errorf("Options.Linger is %v; want 0 (the default, %v) or more", o.Linger, DefaultLinger)
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "txsink"
	}
	return nil
}
