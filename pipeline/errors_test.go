package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func TestInvalidGoesToTheDeadLetterAndCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letters := testkit.NewDeadLetters()
		var sum int
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			nums := stages.Map(in, parse, stages.Name("parse"))
			return stages.Each(nums, func(_ context.Context, n int) error { sum += n; return nil })
		}, letters.Option())
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("x"), []byte("2"), []byte("y"))
		h.WaitCommitted("t", 0, 4)
		if sum != 3 {
			t.Fatalf("sum %d, want 3", sum)
		}
		dead := letters.Records()
		if len(dead) != 2 {
			t.Fatalf("%d dead letters, want 2", len(dead))
		}
		for i, want := range []int64{1, 3} {
			d := dead[i]
			if d.Record.Offset != want || d.Stage != "parse" || !sluice.IsInvalid(d.Err) {
				t.Fatalf("dead letter %d: offset %d stage %q err %v", i, d.Record.Offset, d.Stage, d.Err)
			}
		}
		if string(dead[0].Record.Value) != "x" {
			t.Fatalf("dead letter value %q, want the original bytes", dead[0].Record.Value)
		}
	})
}

func TestInvalidBatchDeadLettersEveryRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := deadLettered(t, 9, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(stages.Batch(in, 3, 0), func(_ context.Context, b []sluice.Record) error {
				if b[0].Offset == 3 {
					return sluice.Invalid(errors.New("bad batch"))
				}
				return nil
			})
		})
		if got != "[3 4 5]" {
			t.Fatalf("dead-lettered %s, want [3 4 5]", got)
		}
	})
}

func TestInvalidWithoutDeadLetterStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse, stages.Name("parse")))
		})
		h.Assign("events", 2)
		h.Send("events", 2, []byte("1"), []byte("2"), []byte("oops"), []byte("3"))
		err := h.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, sluice.ErrNoDeadLetter) {
			t.Fatalf("Run returned %v, want a StageError wrapping ErrNoDeadLetter", err)
		}
		if se.Stage != "parse" || se.Topic != "events" || se.Partition != 2 || se.Offset != 2 {
			t.Fatalf("error names %q %s/%d@%d, want parse events/2@2", se.Stage, se.Topic, se.Partition, se.Offset)
		}
		for _, want := range []string{"events/2", "offset 2", "WithDeadLetter", "oops"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not mention %q", err, want)
			}
		}
		if got := h.Committed("events", 2); got != 2 {
			t.Fatalf("committed %d, want 2 (nothing from the bad offset on)", got)
		}
	})
}

func TestStageErrorStopsRunAndCommitsWhatFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("database down")
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Topic == "t" && r.Offset == 5 {
					return boom
				}
				return nil
			}, stages.Name("write"))
		})
		h.Assign("t", 0)
		h.Assign("u", 0)
		h.Send("u", 0, testkit.Values(3)...)
		h.WaitCommitted("u", 0, 3)
		h.Send("t", 0, testkit.Values(10)...)
		err := h.Wait()
		if !errors.Is(err, boom) {
			t.Fatalf("Run returned %v, want it to wrap %v", err, boom)
		}
		if !strings.Contains(err.Error(), `stage "write" on t/0 at offset 5`) {
			t.Fatalf("error %q does not name the stage and position", err)
		}
		checkCommitted(t, h, 5, "")
		if got := h.Committed("u", 0); got != 3 {
			t.Fatalf("the healthy partition committed %d, want 3", got)
		}
	})
}

func TestPanicInAStageStopsRunWithTheStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			vals := stages.Pool(in, 3, func(_ context.Context, r sluice.Record) (int64, error) {
				if r.Offset == 7 {
					panic("enrich exploded")
				}
				return r.Offset, nil
			}, stages.Name("enrich"))
			return stages.Discard(vals)
		})
		assignAndSend(h, 20)
		err := h.Wait()
		var pe *sluice.PanicError
		var se *sluice.StageError
		if !errors.As(err, &pe) || !errors.As(err, &se) {
			t.Fatalf("Run returned %v, want a StageError with a PanicError", err)
		}
		if se.Stage != "enrich" || se.Offset != 7 {
			t.Fatalf("panic reported at %q offset %d, want enrich offset 7", se.Stage, se.Offset)
		}
		if !strings.Contains(string(pe.Stack), "lifecycle") && !strings.Contains(string(pe.Stack), "errors_test.go") {
			t.Fatalf("stack does not show the panicking function:\n%s", pe.Stack)
		}
		checkCommitted(t, h, 7, "")
	})
}

func TestDeadLetterFailureStopsRunWithoutCommitting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, parse))
		}, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return errors.New("dlq unreachable") }))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("1"), []byte("bad"), []byte("2"))
		err := h.Wait()
		if err == nil || !strings.Contains(err.Error(), "dlq unreachable") || !strings.Contains(err.Error(), "offset 1") {
			t.Fatalf("Run returned %v", err)
		}
		checkCommitted(t, h, 1, "")
	})
}

func TestBuildErrorsNameTheProblem(t *testing.T) {
	cases := map[string]struct {
		build pipeline.Builder
		want  string
	}{
		"consumed twice": {func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			stages.Discard(in)
			return stages.Discard(in)
		}, "consumed twice"},
		"never consumed": {func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			branches := stages.Route(in, 2, func(sluice.Record) int { return 0 })
			return stages.Discard(branches[0])
		}, `output of "Route#1" is never consumed`},
		"zero end": {func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			stages.Discard(in)
			return pipeline.End{}
		}, "zero End"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := testkit.New(t, tc.build)
				if err := h.Fake().Assign("t", 3); err == nil {
					t.Fatal("Assign succeeded")
				}
				err := h.Wait()
				var be *sluice.BuildError
				if !errors.As(err, &be) || be.Topic != "t" || be.Partition != 3 || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Run returned %v, want a BuildError for t/3 mentioning %q", err, tc.want)
				}
			})
		})
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	err := pipeline.Run(context.Background(), testkit.NewFake(), func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	}, pipeline.WithDrainTimeout(0), pipeline.WithMaxInFlight(-1))
	if err == nil || !strings.Contains(err.Error(), "WithDrainTimeout(0s)") || !strings.Contains(err.Error(), "WithMaxInFlight(-1)") {
		t.Fatalf("Run returned %v, want errors naming both options", err)
	}
	if err := pipeline.Run(context.Background(), nil, nil); err == nil {
		t.Fatal("Run accepted a nil source")
	}
}

func TestDeadLetterLimits(t *testing.T) {
	cases := map[string]struct {
		limit   sluice.DeadLetterLimit
		values  string // one char per record: v valid, x invalid
		stopped bool
		want    string
	}{
		"consecutive within limit": {sluice.DeadLetterLimit{MaxConsecutive: 2}, "vxxvxxv", false, ""},
		"consecutive exceeded":     {sluice.DeadLetterLimit{MaxConsecutive: 2}, "vxxxvv", true, "at offset 3: 3 invalid records in a row (MaxConsecutive 2)"},
		"ratio within limit":       {sluice.DeadLetterLimit{MaxRatio: 0.25, Window: 4}, "vvvxvvvxvvvx", false, ""},
		"ratio exceeded":           {sluice.DeadLetterLimit{MaxRatio: 0.25, Window: 4}, "vvvxvvxxvv", true, "at offset 6: 2 of the last 4 records were invalid (MaxRatio 0.25)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := eachHarness(t, func(_ context.Context, r sluice.Record) error {
					if string(r.Value) == "x" {
						return sluice.Invalid(errors.New("bad"))
					}
					return nil
				}, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return nil }),
					pipeline.WithDeadLetterLimit(tc.limit))
				h.Assign("t", 0)
				var vals [][]byte
				for _, c := range tc.values {
					vals = append(vals, []byte{byte(c)})
				}
				h.Send("t", 0, vals...)
				if !tc.stopped {
					h.WaitCommitted("t", 0, int64(len(tc.values)))
					stopClean(t, h)
					return
				}
				err := h.Wait()
				if !errors.Is(err, sluice.ErrDeadLetterLimit) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Run returned %v, want the limit error mentioning %q", err, tc.want)
				}
			})
		})
	}
}

func TestARecordIsDeadLetteredOnceWhenSeveralOfItsValuesAreInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := deadLettered(t, 3, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			pairs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]sluice.Record, error) {
				return []sluice.Record{r, r}, nil // two values per record
			})
			return stages.Each(pairs, func(_ context.Context, r sluice.Record) error {
				if r.Offset == 1 {
					return sluice.Invalid(errors.New("bad"))
				}
				return nil
			})
		})
		if got != "[1]" {
			t.Fatalf("dead-lettered %s, want offset 1 once", got)
		}
	})
}
