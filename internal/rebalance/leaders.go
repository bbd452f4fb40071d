package rebalance

import "github.com/sluice-go/sluice"

// CheckLeadersConfig checks the fields the backends' LeadersConfig share:
// Brokers as [CheckBrokers] and Groups as [CheckLeaderGroups], each error
// starting with prefix ("source", "franz") and naming the field as
// LeadersConfig.<Field>.
func CheckLeadersConfig(prefix string, brokers, groups []string) error {
	if err := CheckBrokers(prefix, "LeadersConfig.Brokers", brokers); err != nil {
		return err
	}
	return CheckLeaderGroups(prefix, "LeadersConfig.Groups", groups)
}

// LowestCommitted is the backends' Leaders.Committed once each group's
// committed offsets were read: per[g][tp] is what group g committed on
// tp, a missing or negative offset meaning nothing. For each of tps it
// returns the lowest offset over groups; a partition some group has not
// committed is absent.
func LowestCommitted(groups []string, tps []sluice.TopicPartition, per map[string]map[sluice.TopicPartition]int64) map[sluice.TopicPartition]int64 {
	out := make(map[sluice.TopicPartition]int64, len(tps))
	for _, tp := range tps {
		low := int64(-1)
		for i, g := range groups {
			v, ok := per[g][tp]
			if !ok || v < 0 {
				low = -1
				break
			}
			if i == 0 || v < low {
				low = v
			}
		}
		if low >= 0 {
			out[tp] = low
		}
	}
	return out
}
