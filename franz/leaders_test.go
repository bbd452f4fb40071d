package franz

import (
	"testing"

	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bad LeadersConfig fields are errors naming them: the brokers and groups
// as internal/rebalance.CheckLeadersConfig (whose test checks each kind of
// mistake), the client's own options here.
func TestNewLeadersErrors(t *testing.T) {
	b := []string{"localhost:9092"}
	kafkadriver.WantConfigErrors(t, NewLeaders, []kafkadriver.ConfigError[LeadersConfig]{
		{Name: "no brokers", Config: LeadersConfig{Groups: []string{"a"}}, Want: "LeadersConfig.Brokers is empty"},
		{Name: "no groups", Config: LeadersConfig{Brokers: b}, Want: "LeadersConfig.Groups is empty"},
		{Name: "consumer group opt", Config: LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{kgo.ConsumerGroup("x")}}, Want: "kgo.ConsumerGroup cannot be set"},
		{Name: "consume topics opt", Config: LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{kgo.ConsumeTopics("x")}}, Want: "kgo.ConsumeTopics cannot be set"},
		{Name: "seed brokers opt", Config: LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{kgo.SeedBrokers("y:1")}}, Want: "kgo.SeedBrokers cannot be set"},
		{Name: "nil opt", Config: LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{nil}}, Want: "LeadersConfig.Opts[0] is nil"},
	})
	l, err := NewLeaders(LeadersConfig{Brokers: b, Groups: []string{"a", "b"}, Opts: []kgo.Opt{kgo.ClientID("follower")}})
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	l.Close()
}
