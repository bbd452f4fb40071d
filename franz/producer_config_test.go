package franz_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/franz"
)

// Bad configuration and the kgo options the producer relies on are
// refused with an error naming the field or the option and why.
func TestNewProducerRefusesBadConfig(t *testing.T) {
	t.Parallel()
	ok := []string{"localhost:9092"}
	for name, tc := range map[string]struct {
		cfg  franz.ProducerConfig
		want string
	}{
		"no brokers":       {franz.ProducerConfig{}, "franz: ProducerConfig.Brokers is empty"},
		"empty broker":     {franz.ProducerConfig{Brokers: []string{"a:1", " "}}, `franz: ProducerConfig.Brokers[1] = " ": want one host:port`},
		"negative close":   {franz.ProducerConfig{Brokers: ok, CloseTimeout: -time.Second}, "franz: ProducerConfig.CloseTimeout = -1s: want 0 (the default, 5s) or more"},
		"negative deliver": {franz.ProducerConfig{Brokers: ok, DeliveryTimeout: -time.Second}, "franz: ProducerConfig.DeliveryTimeout = -1s: want 0 (the default, 30s) or more"},
		"nil opt":          {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{nil}}, "franz: ProducerConfig.Opts[0] is nil"},
		"seed brokers":     {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.SeedBrokers("x:1")}}, "kgo.SeedBrokers cannot be set: use ProducerConfig.Brokers"},
		"logger":           {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(nil, kgo.LogLevelInfo, nil))}}, "kgo.WithLogger cannot be set: use ProducerConfig.Logger"},
		"transactional":    {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.TransactionalID("x")}}, "kgo.TransactionalID cannot be set: the producer is not transactional"},
		"manual flushing":  {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.ManualFlushing()}}, "kgo.ManualFlushing cannot be set"},
		"delivery timeout": {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.RecordDeliveryTimeout(time.Second)}}, "kgo.RecordDeliveryTimeout cannot be set: kgo counts it from the record's timestamp"},
		"topic always":     {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.DefaultProduceTopic("x"), kgo.DefaultProduceTopicAlways()}}, "kgo.DefaultProduceTopicAlways cannot be set"},
		"consumer group":   {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t")}}, "kgo.ConsumerGroup cannot be set: the producer does not consume"},
		"kgo refuses":      {franz.ProducerConfig{Brokers: ok, Opts: []kgo.Opt{kgo.MaxBufferedRecords(0)}}, "franz: ProducerConfig.Opts: "},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := franz.NewProducer(tc.cfg)
			if err == nil {
				_ = p.Close()
				t.Fatalf("NewProducer = nil error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewProducer = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Tuning options pass: NewProducer accepts them and Close of the idle
// producer returns nil.
func TestNewProducerAcceptsTuning(t *testing.T) {
	t.Parallel()
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: []string{"localhost:9092"}, Opts: []kgo.Opt{
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.MaxBufferedRecords(100),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
}
