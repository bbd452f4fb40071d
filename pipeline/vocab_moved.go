package pipeline

import "github.com/sluice-go/sluice"

// Temporary: the names moved to package sluice, until their users are
// updated.
type (
	Record             = sluice.Record
	Header             = sluice.Header
	TopicPartition     = sluice.TopicPartition
	Offset             = sluice.Offset
	Message            = sluice.Message
	DeadLetter         = sluice.DeadLetter
	DeadLetterLimit    = sluice.DeadLetterLimit
	StartChecker       = sluice.StartChecker
	AckOutcome         = sluice.AckOutcome
	Ack                = sluice.Ack
	RetryPolicy        = sluice.RetryPolicy
	StageError         = sluice.StageError
	PanicError         = sluice.PanicError
	BuildError         = sluice.BuildError
	CommitError        = sluice.CommitError
	CloseError         = sluice.CloseError
	UndeliveredMessage = sluice.UndeliveredMessage
	Source             = sluice.Source
	Group              = sluice.Group
	AckGroup           = sluice.AckGroup
	Hook               = sluice.Hook

	HookPartitionAssigned  = sluice.HookPartitionAssigned
	HookPartitionRevoked   = sluice.HookPartitionRevoked
	HookPartitionLost      = sluice.HookPartitionLost
	HookPartitionPaused    = sluice.HookPartitionPaused
	HookPartitionResumed   = sluice.HookPartitionResumed
	HookRecordsDelivered   = sluice.HookRecordsDelivered
	HookRecordsCompleted   = sluice.HookRecordsCompleted
	HookValuesFiltered     = sluice.HookValuesFiltered
	HookRecordDeadLettered = sluice.HookRecordDeadLettered
	HookInFlight           = sluice.HookInFlight
	HookStageCall          = sluice.HookStageCall
	HookStageRetry         = sluice.HookStageRetry
	HookStageFailed        = sluice.HookStageFailed
	HookStuck              = sluice.HookStuck
	HookPolled             = sluice.HookPolled
	HookJoined             = sluice.HookJoined
	HookCommitted          = sluice.HookCommitted
	HookHighWatermark      = sluice.HookHighWatermark
)

const (
	AckAccepted               = sluice.AckAccepted
	AckRejected               = sluice.AckRejected
	AckReleased               = sluice.AckReleased
	MaxDeliveriesStage        = sluice.MaxDeliveriesStage
	DeadLetterHeaderTopic     = sluice.DeadLetterHeaderTopic
	DeadLetterHeaderPartition = sluice.DeadLetterHeaderPartition
	DeadLetterHeaderOffset    = sluice.DeadLetterHeaderOffset
	DeadLetterHeaderError     = sluice.DeadLetterHeaderError
	DeadLetterHeaderStage     = sluice.DeadLetterHeaderStage
)

var (
	ErrRevoked         = sluice.ErrRevoked
	ErrLost            = sluice.ErrLost
	ErrDrainTimeout    = sluice.ErrDrainTimeout
	ErrAbandoned       = sluice.ErrAbandoned
	ErrNotDeadLettered = sluice.ErrNotDeadLettered
	ErrNoDeadLetter    = sluice.ErrNoDeadLetter
	ErrDeadLetterLimit = sluice.ErrDeadLetterLimit
	ErrMissingTopic    = sluice.ErrMissingTopic
)

func Invalid(err error) error    { return sluice.Invalid(err) }
func IsInvalid(err error) bool   { return sluice.IsInvalid(err) }
func Permanent(err error) error  { return sluice.Permanent(err) }
func IsPermanent(err error) bool { return sluice.IsPermanent(err) }
func DefaultRetry() RetryPolicy  { return sluice.DefaultRetry() }
