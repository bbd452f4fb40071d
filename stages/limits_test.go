package stages_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// gauge measures calls that overlap: how many run at once in all, and per
// key (a record's value), and in which order each partition made them.
type gauge struct {
	mu     sync.Mutex
	now    int
	max    int
	key    map[string]int
	maxKey map[string]int
	order  map[int32][]int64
}

func newGauge() *gauge {
	return &gauge{key: map[string]int{}, maxKey: map[string]int{}, order: map[int32][]int64{}}
}

// call is a stage function taking one second (of the bubble's clock).
func (g *gauge) call(_ context.Context, r sluice.Record) (sluice.Record, error) {
	k := string(r.Value)
	g.mu.Lock()
	g.now++
	g.max = max(g.max, g.now)
	g.key[k]++
	g.maxKey[k] = max(g.maxKey[k], g.key[k])
	g.order[r.Partition] = append(g.order[r.Partition], r.Offset)
	g.mu.Unlock()
	time.Sleep(time.Second)
	g.mu.Lock()
	g.now--
	g.key[k]--
	g.mu.Unlock()
	return r, nil
}

func (g *gauge) each(ctx context.Context, r sluice.Record) error {
	_, err := g.call(ctx, r)
	return err
}

func (g *gauge) flat(ctx context.Context, r sluice.Record) ([]sluice.Record, error) {
	_, err := g.call(ctx, r)
	return []sluice.Record{r}, err
}

func (g *gauge) maxima() (all int, perKey map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max, copyMap(g.maxKey)
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func byValue(r sluice.Record) string { return string(r.Value) }

func repeat(v string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(v)
	}
	return out
}

// A Limiter bounds the calls of every partition together: two partitions
// with 4 workers each make at most 3 calls at once, where the workers
// alone (a limit per partition) allow 8.
func TestLimiterBoundsCallsAcrossPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGauge()
		lim := stages.NewLimiter(3)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 4, g.call, lim))
		})
		h.Assign("t", 0, 1)
		h.Send("t", 0, testkit.Values(12)...)
		h.Send("t", 1, testkit.Values(12)...)
		h.WaitCommitted("t", 0, 12)
		h.WaitCommitted("t", 1, 12)
		stopClean(t, h)
		if all, _ := g.maxima(); all != 3 {
			t.Fatalf("at most %d calls ran at once, want 3 (the Limiter's n)", all)
		}
	})
}

// A KeyLock given to PoolByKey makes one call at a time per key across
// partitions: one account whose records are on two partitions is never
// called from both at once, each partition still calls it in offset order,
// and another key runs beside it.
func TestKeyLockOnPoolByKeyHoldsAcrossPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGauge()
		keys := stages.NewKeyLock()
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.PoolByKey(in, 4, byValue, g.call, keys))
		})
		h.Assign("t", 0, 1, 2)
		h.Send("t", 0, repeat("acct", 10)...)
		h.Send("t", 1, repeat("acct", 10)...)
		h.Send("t", 2, repeat("other", 10)...)
		for p := range int32(3) {
			h.WaitCommitted("t", p, 10)
		}
		stopClean(t, h)
		all, perKey := g.maxima()
		if perKey["acct"] != 1 || perKey["other"] != 1 || all != 2 {
			t.Fatalf("calls at once: %d in all, per key %v; want 2 in all, one per key", all, perKey)
		}
		for p := range int32(3) {
			if got := g.order[p]; !slices.IsSorted(got) || len(got) != 10 {
				t.Fatalf("partition %d called at offsets %v, want 0..9 in order", p, got)
			}
		}
	})
}

// Without the KeyLock (the per-partition guarantee only), the same key on
// two partitions is called from both at once: what the KeyLock is for.
func TestPoolByKeyAloneIsPerPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGauge()
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.PoolByKey(in, 4, byValue, g.call))
		})
		h.Assign("t", 0, 1)
		h.Send("t", 0, repeat("acct", 4)...)
		h.Send("t", 1, repeat("acct", 4)...)
		h.WaitCommitted("t", 0, 4)
		h.WaitCommitted("t", 1, 4)
		stopClean(t, h)
		if _, perKey := g.maxima(); perKey["acct"] != 2 {
			t.Fatalf("one key ran %d calls at once on two partitions, want 2", perKey["acct"])
		}
	})
}

// Every stage calling a function of its user takes the limits: LockKey
// (and a Limiter) on Map, FlatMap, Pool and Each, across three partitions.
func TestLimitsOnEveryCallingStage(t *testing.T) {
	ends := map[string]func(in pipeline.Stream[sluice.Record], g *gauge, opts ...stages.CallOption) pipeline.End{
		"Map": func(in pipeline.Stream[sluice.Record], g *gauge, opts ...stages.CallOption) pipeline.End {
			return stages.Discard(stages.Map(in, g.call, opts...))
		},
		"FlatMap": func(in pipeline.Stream[sluice.Record], g *gauge, opts ...stages.CallOption) pipeline.End {
			return stages.Discard(stages.FlatMap(in, g.flat, opts...))
		},
		"Pool": func(in pipeline.Stream[sluice.Record], g *gauge, opts ...stages.CallOption) pipeline.End {
			return stages.Discard(stages.Pool(in, 4, g.call, opts...))
		},
		"PoolByKey": func(in pipeline.Stream[sluice.Record], g *gauge, opts ...stages.CallOption) pipeline.End {
			return stages.Discard(stages.PoolByKey(in, 4, func(sluice.Record) string { return "pool's key" }, g.call, opts...))
		},
		"Each": func(in pipeline.Stream[sluice.Record], g *gauge, opts ...stages.CallOption) pipeline.End {
			return stages.Each(in, g.each, opts...)
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGauge()
				keys := stages.NewKeyLock()
				lim := stages.NewLimiter(2)
				h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return end(in, g, stages.LockKey(keys, byValue), lim)
				})
				h.Assign("t", 0, 1, 2)
				// Key a on every partition, b on two, c on one.
				h.Send("t", 0, []byte("a"), []byte("b"), []byte("a"), []byte("c"))
				h.Send("t", 1, []byte("b"), []byte("a"), []byte("b"), []byte("a"))
				h.Send("t", 2, []byte("a"), []byte("a"), []byte("a"), []byte("a"))
				for p := range int32(3) {
					h.WaitCommitted("t", p, 4)
				}
				stopClean(t, h)
				all, perKey := g.maxima()
				want := map[string]int{"a": 1, "b": 1, "c": 1}
				if all != 2 || len(perKey) != 3 || perKey["a"] != 1 || perKey["b"] != 1 || perKey["c"] != 1 {
					t.Fatalf("calls at once: %d in all, per key %v; want 2 in all, %v", all, perKey, want)
				}
			})
		})
	}
}

// A call retrying holds neither its slot nor its key during the backoff:
// another partition's call runs meanwhile.
func TestLimiterSlotIsFreeDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := stages.NewLimiter(1)
		var mu sync.Mutex
		var calls []string
		failed := false
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, string(r.Value))
				if r.Partition == 0 && !failed {
					failed = true
					return errors.New("busy") // retried after 1s
				}
				return nil
			}, lim, stages.Retry(sluice.RetryPolicy{Attempts: 2, Initial: time.Second, Max: time.Second}))
		})
		h.Assign("t", 0)
		h.Send("t", 0, []byte("p0"))
		synctest.Wait() // p0 failed once and waits for its retry
		h.Assign("t", 1)
		h.Send("t", 1, []byte("p1"))
		h.WaitCommitted("t", 1, 1) // during p0's backoff
		h.WaitCommitted("t", 0, 1)
		stopClean(t, h)
		if want := []string{"p0", "p1", "p0"}; !slices.Equal(calls, want) {
			t.Fatalf("calls %v, want %v", calls, want)
		}
	})
}

// holdingTheSlot starts a Harness with opts whose graph is one Each stage
// under a Limiter of one slot that holds the value "hold" at the returned
// gate, and assigns it t/0 and t/1.
func holdingTheSlot(t *testing.T, opts ...pipeline.Option) (*testkit.Harness, *gate) {
	t.Helper()
	lim := stages.NewLimiter(1)
	b := holdValue("hold")
	h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, b.wait, lim)
	}, opts...)
	h.Assign("t", 0, 1)
	return h, b
}

// waitForTheHeldSlot sends "hold" to t/0, waits until b holds it (and
// with it the slot), then sends values to t/1 and waits until t/1's first
// value blocks waiting for the slot.
func waitForTheHeldSlot(h *testkit.Harness, b *gate, values ...string) {
	h.Send("t", 0, []byte("hold"))
	<-b.closed
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	h.Send("t", 1, vs...)
	synctest.Wait()
}

// releaseTheSlot lets the value holding the slot go on, waits until t/0
// commits it, and stops the harness cleanly.
func releaseTheSlot(t *testing.T, h *testkit.Harness, b *gate) {
	t.Helper()
	close(b.open)
	h.WaitCommitted("t", 0, 1)
	stopClean(t, h)
}

// Waiting for a slot ends with the partition's context: a lost partition
// whose value waits for a slot another partition holds exits at once, its
// value uncommitted; the holder goes on.
func TestLimiterWaitEndsWhenThePartitionIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, b := holdingTheSlot(t)
		waitForTheHeldSlot(h, b, "x", "y") // t/1's first value waits for the slot
		h.Lose("t", 1)
		if got := h.Committed("t", 1); got != -1 {
			t.Fatalf("lost t/1 committed %d, want nothing (-1)", got)
		}
		releaseTheSlot(t, h, b)
	})
}

// A graceful revoke waits for its values' slots within the drain timeout:
// when the holder never lets go, the drain times out, the waiting value
// stays uncommitted and what finished before it is committed.
func TestLimiterWaitEndsAtTheDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, b := holdingTheSlot(t, pipeline.WithDrainTimeout(5*time.Second))
		h.Send("t", 1, []byte("x"))
		h.WaitCommitted("t", 1, 1)
		waitForTheHeldSlot(h, b, "y", "z")
		start := time.Now()
		h.Revoke("t", 1)
		if waited := time.Since(start); waited != 5*time.Second {
			t.Fatalf("the revoke took %v, want the drain timeout (5s)", waited)
		}
		if got := h.Committed("t", 1); got != 1 {
			t.Fatalf("t/1 committed %d after its drain timed out, want 1", got)
		}
		releaseTheSlot(t, h, b)
	})
}

// A shutdown drains every partition while they compete for one slot and
// one key: nothing deadlocks, everything commits.
func TestLimitsNeverDeadlockAShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGauge()
		lim := stages.NewLimiter(1)
		keys := stages.NewKeyLock()
		fake := testkit.NewFake()
		run := testkit.Start(t, fake, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			m := stages.Map(in, g.call, stages.LockKey(keys, func(sluice.Record) string { return "one" }))
			return stages.Discard(stages.PoolByKey(m, 4, byValue, g.call, lim, keys))
		}, pipeline.WithDrainTimeout(time.Minute)) // 40 calls of 1s, one at a time
		for p := range int32(4) {
			if err := fake.Send("t", p, repeat("one", 5)...); err != nil {
				t.Fatal(err)
			}
		}
		if err := fake.Assign("t", 0, 1, 2, 3); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // every record was handed over: the shutdown drains them all
		for p := range int32(4) {
			if n := fake.Delivered("t", p); n != 5 {
				t.Fatalf("t/%d: %d records delivered before the shutdown, want 5", p, n)
			}
		}
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		for p := range int32(4) {
			if got := fake.Committed("t", p); got != 5 {
				t.Fatalf("t/%d committed %d at shutdown, want 5", p, got)
			}
		}
	})
}

// buildErr assigns t/0 and t/1 with build and returns Run's error.
func buildErr(t *testing.T, build pipeline.Builder) error {
	t.Helper()
	h := testkit.New(t, build)
	if err := h.Fake().Assign("t", 0); err == nil {
		_ = h.Fake().Assign("t", 1)
	}
	return h.Wait()
}

// A Limiter or KeyLock created by the builder is a limit per partition
// only: the second partition's build fails naming the stage and saying to
// create it once.
func TestLimitsCreatedByTheBuilderFailTheBuild(t *testing.T) {
	for name, opt := range map[string]func() stages.CallOption{
		"Limiter": func() stages.CallOption { return stages.NewLimiter(4) },
		"KeyLock": func() stages.CallOption { return stages.LockKey(stages.NewKeyLock(), byValue) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				err := buildErr(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(stages.Pool(in, 4, echo, opt(), stages.Name("score")))
				})
				var be *sluice.BuildError
				if !errors.As(err, &be) || be.Partition != 1 || !strings.Contains(err.Error(), `stage "score"`) ||
					!strings.Contains(err.Error(), "different "+name) || !strings.Contains(err.Error(), "create it once, before pipeline.Run") {
					t.Fatalf("Run returned %v, want a BuildError for t/1 naming the stage and the %s", err, name)
				}
			})
		})
	}
}

func echo(_ context.Context, r sluice.Record) (sluice.Record, error) { return r, nil }

// Bad limits fail the build with an error naming the stage and the
// mistake.
func TestBadLimitsFailTheBuild(t *testing.T) {
	keys := stages.NewKeyLock()
	for name, c := range map[string]struct {
		wire func(in pipeline.Stream[sluice.Record]) pipeline.End
		want string
	}{
		"n below one": {func(in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(context.Context, sluice.Record) error { return nil }, stages.NewLimiter(0))
		}, "stages.NewLimiter(0): n must be at least 1"},
		"a nil Limiter": {func(in pipeline.Stream[sluice.Record]) pipeline.End {
			var lim *stages.Limiter
			return stages.Discard(stages.Map(in, echo, lim))
		}, "Limiter is nil"},
		"a KeyLock without a key": {func(in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, echo, keys))
		}, "stages.Map: a KeyLock needs the key of each value: give stages.LockKey(keys, key)"},
		"a key of another type": {func(in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, echo, stages.LockKey(keys, func(s string) string { return s })))
		}, "key is a func(string) string; this stage's values are sluice.Record"},
		"a nil key": {func(in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, echo, stages.LockKey[sluice.Record](keys, nil)))
		}, "stages.LockKey: key is nil"},
		"a stage that does not take limits": {func(in pipeline.Stream[sluice.Record]) pipeline.End {
			sb := stages.NewSharedBatcher(func(context.Context, []sluice.Record) error { return nil }, 10, time.Second, stages.NewLimiter(2))
			return sb.Feed(in)
		}, "SharedBatch does not take them"},
	} {
		t.Run(name, func(t *testing.T) {
			expectBuildError(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return c.wire(in)
			}, c.want)
		})
	}
}

// One Limiter may serve two stages of a graph and two Runs: a limit on one
// service for the whole process.
func TestLimiterServesSeveralStagesAndRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGauge()
		lim := stages.NewLimiter(1)
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(stages.Map(in, g.call, lim), g.each, lim)
		}
		a, b := testkit.New(t, build), testkit.New(t, build)
		a.Assign("t", 0)
		b.Assign("t", 1)
		a.Send("t", 0, testkit.Values(3)...)
		b.Send("t", 1, testkit.Values(3)...)
		a.WaitCommitted("t", 0, 3)
		b.WaitCommitted("t", 1, 3)
		if err := errors.Join(a.Stop(), b.Stop()); err != nil {
			t.Fatal(err)
		}
		if all, _ := g.maxima(); all != 1 {
			t.Fatalf("%d calls ran at once, want 1", all)
		}
	})
}
