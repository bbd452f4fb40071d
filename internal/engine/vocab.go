package engine

import "github.com/sluice-go/sluice"

// The engine's names for the types of the shared vocabulary (the root
// package sluice, which defines and documents them): aliases, so that the
// runtime's code reads as before and its values are the public ones.
type (
	Record          = sluice.Record
	Header          = sluice.Header
	TopicPartition  = sluice.TopicPartition
	Offset          = sluice.Offset
	DeadLetter      = sluice.DeadLetter
	DeadLetterLimit = sluice.DeadLetterLimit
	RetryPolicy     = sluice.RetryPolicy
	AckOutcome      = sluice.AckOutcome
	Ack             = sluice.Ack
	StageError      = sluice.StageError
	BuildError      = sluice.BuildError
	PanicError      = sluice.PanicError
	Hook            = sluice.Hook
)
