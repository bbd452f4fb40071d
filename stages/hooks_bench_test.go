package stages_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// BenchmarkHooks runs stage graphs with no hooks, with metrics.Health
// only (no stage-call hook: stages read no clock) and with metrics.Metrics
// and Health (every stage call timed and observed), to show what hooks
// cost per message (docs/performance.md, "Hooks").
func BenchmarkHooks(b *testing.B) {
	graphs := []struct {
		name string
		wire func(in pipeline.Stream[int64]) pipeline.End
	}{
		{"Baseline", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(in) }},
		{"MapChain4", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Discard(stages.Map(stages.Map(stages.Map(stages.Map(in, inc), inc), inc), inc))
		}},
		{"Pool4", func(in pipeline.Stream[int64]) pipeline.End { return stages.Discard(stages.Pool(in, 4, inc)) }},
		{"Each", func(in pipeline.Stream[int64]) pipeline.End {
			return stages.Each(in, func(context.Context, int64) error { return nil })
		}},
	}
	hookSets := []struct {
		name  string
		hooks func(b *testing.B) []pipeline.Option
	}{
		{"none", func(*testing.B) []pipeline.Option { return nil }},
		{"health", func(b *testing.B) []pipeline.Option {
			return []pipeline.Option{pipeline.WithHooks(newHealth(b))}
		}},
		{"metrics", func(b *testing.B) []pipeline.Option {
			m, err := metrics.New(prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			return []pipeline.Option{pipeline.WithHooks(m, newHealth(b))}
		}},
	}
	for _, g := range graphs {
		for _, hs := range hookSets {
			b.Run(g.name+"/"+hs.name, func(b *testing.B) { benchGraph(b, g.wire, hs.hooks(b)...) })
		}
	}
}

func newHealth(b *testing.B) *metrics.Health {
	h, err := metrics.NewHealth()
	if err != nil {
		b.Fatal(err)
	}
	return h
}
