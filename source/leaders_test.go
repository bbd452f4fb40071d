package source

import (
	"testing"

	"github.com/sluice-go/sluice/internal/kafkadriver"
)

// Bad LeadersConfig fields are errors naming them: the brokers and groups
// as internal/rebalance.CheckLeadersConfig (whose test checks each kind of
// mistake), the client's own options here.
func TestNewLeadersErrors(t *testing.T) {
	b := []string{"localhost:9092"}
	kafkadriver.WantConfigErrors(t, NewLeaders, []kafkadriver.ConfigError[LeadersConfig]{
		{Name: "no brokers", Config: LeadersConfig{Groups: []string{"a"}}, Want: "LeadersConfig.Brokers is empty"},
		{Name: "no groups", Config: LeadersConfig{Brokers: b}, Want: "LeadersConfig.Groups is empty"},
		{Name: "bootstrap override", Config: LeadersConfig{Brokers: b, Groups: []string{"a"}, Overrides: map[string]any{"bootstrap.servers": "x:1"}}, Want: `LeadersConfig.Overrides["bootstrap.servers"] cannot be set`},
		{Name: "bad value", Config: LeadersConfig{Brokers: b, Groups: []string{"a"}, Overrides: map[string]any{"socket.timeout.ms": 1.5}}, Want: `Overrides["socket.timeout.ms"] = 1.5`},
		{Name: "unknown property", Config: LeadersConfig{Brokers: b, Groups: []string{"a"}, Overrides: map[string]any{"no.such.property": 1}}, Want: "no.such.property"},
	})
}
