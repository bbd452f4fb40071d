package confluent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
)

// Bad transactional configurations are errors naming the field or the
// override; a second producer for one source is refused.
func TestNewTransactionalProducerRefusesBadConfig(t *testing.T) {
	src, err := source.NewSource(source.Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"t"}}})
	if err != nil {
		t.Fatal(err)
	}
	ok := confluent.TransactionalConfig{ProducerConfig: confluent.ProducerConfig{Brokers: []string{"127.0.0.1:1"}}, TransactionConfig: sink.TransactionConfig{TransactionalID: "id"}}
	with := func(f func(*confluent.TransactionalConfig)) confluent.TransactionalConfig { c := ok; f(&c); return c }
	for name, tc := range map[string]struct {
		src  *source.Source
		cfg  confluent.TransactionalConfig
		want string
	}{
		"nil source":       {nil, ok, "the source is nil"},
		"empty id":         {src, with(func(c *confluent.TransactionalConfig) { c.TransactionalID = " " }), "TransactionalConfig.TransactionalID is empty"},
		"negative timeout": {src, with(func(c *confluent.TransactionalConfig) { c.TransactionTimeout = -time.Second }), "TransactionalConfig.TransactionTimeout = -1s"},
		"negative commit":  {src, with(func(c *confluent.TransactionalConfig) { c.CommitTimeout = -time.Second }), "TransactionalConfig.CommitTimeout = -1s"},
		"id override": {src, with(func(c *confluent.TransactionalConfig) {
			c.Overrides = map[string]any{"transactional.id": "x"}
		}), `Overrides["transactional.id"] cannot be set`},
		"no brokers": {src, with(func(c *confluent.TransactionalConfig) { c.Brokers = nil }), "ProducerConfig.Brokers is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := confluent.NewTransactionalProducer(tc.src, tc.cfg)
			if err == nil {
				_ = p.Close()
				t.Fatalf("NewTransactionalProducer succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
	p, err := confluent.NewTransactionalProducer(src, ok)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p2, err := confluent.NewTransactionalProducer(src, ok); err == nil || !strings.Contains(err.Error(), "has a transactional producer already") {
		if p2 != nil {
			_ = p2.Close()
		}
		t.Fatalf("second producer for one source: %v, want a refusal", err)
	}
}
