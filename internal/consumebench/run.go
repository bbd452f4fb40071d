package consumebench

import (
	"context"
	"testing"
)

// RunUntil calls run in a goroutine until done is closed, then cancels
// run's context and waits for it to return. It fails b if run returns
// before done is closed, or returns an error.
func RunUntil(b *testing.B, done <-chan struct{}, run func(ctx context.Context) error) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx) }()
	select {
	case <-done:
	case err := <-errc:
		b.Fatalf("Run returned early: %v", err)
	}
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}
