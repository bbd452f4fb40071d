package follow

import "github.com/sluice-go/sluice"

// The follower's group is a layer: an inner source running exactly-once
// (a transactional producer bound to it) puts its transactional group
// beneath the follower's, next to the runtime's, so that the records the
// follower holds for the leaders are in no transaction, and a commit's
// barrier waits only for the records the follower handed on. Every
// record the follower hands on then passes through the transactional
// group, which begins a transaction for it, or holds it while a commit
// is due (and asks the follower to pause the partition, as the runtime
// does when its budget is full).

// Inner returns the group the follower hands records on to: the
// runtime's, or the transactional group the inner source put beneath.
func (g *group) Inner() sluice.Group { return g.Group }

// SetInner replaces it; the inner source calls it before its first call.
func (g *group) SetInner(inner sluice.Group) { g.Group = inner }

// Rewound drops the records held of tps: the transactional group beneath
// aborted a transaction and sought tps back to their committed offsets,
// so what the follower holds of them was fetched before the seek and
// comes again. Their new graphs have room; a partition the source paused
// for the follower is listed by the next Resumable, as after any release.
func (g *group) Rewound(tps []sluice.TopicPartition) {
	for _, tp := range tps {
		p := g.parts[tp]
		if p == nil {
			continue
		}
		p.held = nil
		p.next = -1
		p.runtimePaused = false
		g.report(tp, p, true)
	}
}
