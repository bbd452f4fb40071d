package franz

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Bad LeadersConfig fields are errors naming them: the brokers and groups
// as internal/rebalance.CheckLeadersConfig (whose test checks each kind of
// mistake), the client's own options here.
func TestNewLeadersErrors(t *testing.T) {
	b := []string{"localhost:9092"}
	for _, tc := range []struct {
		name string
		cfg  LeadersConfig
		want string
	}{
		{"no brokers", LeadersConfig{Groups: []string{"a"}}, "LeadersConfig.Brokers is empty"},
		{"no groups", LeadersConfig{Brokers: b}, "LeadersConfig.Groups is empty"},
		{"consumer group opt", LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{kgo.ConsumerGroup("x")}}, "kgo.ConsumerGroup cannot be set"},
		{"consume topics opt", LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{kgo.ConsumeTopics("x")}}, "kgo.ConsumeTopics cannot be set"},
		{"seed brokers opt", LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{kgo.SeedBrokers("y:1")}}, "kgo.SeedBrokers cannot be set"},
		{"nil opt", LeadersConfig{Brokers: b, Groups: []string{"a"}, Opts: []kgo.Opt{nil}}, "LeadersConfig.Opts[0] is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLeaders(tc.cfg)
			if err == nil {
				l.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewLeaders: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	l, err := NewLeaders(LeadersConfig{Brokers: b, Groups: []string{"a", "b"}, Opts: []kgo.Opt{kgo.ClientID("follower")}})
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	l.Close()
}
