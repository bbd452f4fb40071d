package rebalance

import (
	"errors"
	"fmt"
	"strings"
)

// CheckBrokers returns an error naming field (as "<prefix>: <field>") when
// brokers is empty, or naming the element that is blank or holds more
// than one address (a comma-separated list), or nil. The backends' Config,
// ProducerConfig and LeadersConfig validations all call it.
func CheckBrokers(prefix, field string, brokers []string) error {
	if len(brokers) == 0 {
		return errors.New(prefix + ": " + field + " is empty")
	}
	for i, b := range brokers {
		if strings.TrimSpace(b) == "" || strings.Contains(b, ",") {
			return fmt.Errorf("%s: %s[%d] = %q: want one host:port", prefix, field, i, b)
		}
	}
	return nil
}

// CheckLeaderGroups returns an error naming field when groups (the leader
// groups of a follower's Leaders) is empty, or naming the element that is
// blank or repeats an earlier one, or nil.
func CheckLeaderGroups(prefix, field string, groups []string) error {
	if len(groups) == 0 {
		return fmt.Errorf("%s: %s is empty: name at least one leader group", prefix, field)
	}
	seen := make(map[string]int, len(groups))
	for i, g := range groups {
		if strings.TrimSpace(g) == "" {
			return fmt.Errorf("%s: %s[%d] is empty", prefix, field, i)
		}
		if j, ok := seen[g]; ok {
			return fmt.Errorf("%s: %s[%d] = %q repeats %s[%d]", prefix, field, i, g, field, j)
		}
		seen[g] = i
	}
	return nil
}
