package pipeline

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// WithHooks registers hooks of Run's events (metrics, health checks,
// tracing; see [sluice.Hook]). It may be given several times; hooks are
// called in the order given. Each hook must implement at least one Hook*
// interface of package sluice: nil, or a value implementing none (often a
// method named without its On prefix, or with a wrong signature), makes
// Run return an error naming its position and type.
func WithHooks(hooks ...sluice.Hook) Option {
	return func(c *config) {
		for i, h := range hooks {
			switch {
			case h == nil:
				c.bad("WithHooks: hook %d is nil", i)
			case engine.EventsOf(h) == 0:
				c.bad("WithHooks: hook %d (%T) implements no hook interface (sluice.HookPartitionAssigned, ..., sluice.HookStageCall: methods named On<Event>)", i, h)
			default:
				c.Hooks = append(c.Hooks, h)
			}
		}
	}
}
