package exactlyonce

import (
	"context"

	"github.com/sluice-go/sluice"
)

// Layer is a group that wraps the runtime's to hold records back from the
// graphs until a condition of its own holds: the follower's group, which
// waits for leader groups, is one. A transaction must hold exactly the
// records handed to a graph, and the barrier of a commit must wait for
// those and no others, so the Group goes beneath every Layer, next to the
// runtime's group ([Insert]): records a Layer holds are in no transaction
// and no barrier waits for them, and every record a Layer hands on passes
// through the Group, which begins a transaction for it or holds it while
// a commit is due.
//
// The Group calls a Layer only from the source's poll goroutine, inside a
// call the source made.
type Layer interface {
	sluice.Group
	// Inner returns the group the Layer hands records on to.
	Inner() sluice.Group
	// SetInner replaces it. Insert calls it once, before the source's
	// first call.
	SetInner(g sluice.Group)
	// Rewound tells the Layer that the Group sought tps back to their
	// committed offsets after an aborted transaction (abort.go) and gave
	// them new graphs: every record of tps the Layer holds was fetched
	// before the seek and is fetched again, so the Layer drops them, and
	// the next records it gets of tps start at the committed offsets.
	Rewound(tps []sluice.TopicPartition)
}

// Insert wraps the group beneath g's Layers (g itself when it is no
// Layer) in a Group committing through txn, as [Wrap] does, and puts the
// Group in its place. It returns the group the source's poll loop feeds
// (g, or the Group when g is no Layer) and the Group, whose Err the
// source checks.
func Insert(ctx context.Context, g sluice.Group, txn Txn, cfg Config) (feed sluice.Group, eg *Group) {
	var layers []Layer
	inner := g
	for {
		l, ok := inner.(Layer)
		if !ok {
			break
		}
		layers = append(layers, l)
		inner = l.Inner()
	}
	eg = Wrap(ctx, inner, txn, cfg)
	if len(layers) == 0 {
		return eg, eg
	}
	layers[len(layers)-1].SetInner(eg)
	eg.layers = layers
	return g, eg
}

// rewound tells the Layers above the Group, innermost first, that tps
// were rewound.
func (g *Group) rewound(tps []sluice.TopicPartition) {
	for i := len(g.layers) - 1; i >= 0; i-- {
		g.layers[i].Rewound(tps)
	}
}
