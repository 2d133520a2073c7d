package controlplanetest

import (
	"context"
	"slices"
	"testing"

	"github.com/sortie-run/sortie"
)

// Harness makes control planes of one driver for the suite.
type Harness interface {
	// MakeControlPlane returns a new, empty control plane. The harness
	// closes it in Close if the test did not.
	MakeControlPlane(ctx context.Context, t *testing.T) sortie.ControlPlane
	// SharedAcrossProcesses reports whether several handles (and
	// processes) may open the same store, as sqlite and DynamoDB allow.
	// When true the suite also calls MakePeer.
	SharedAcrossProcesses() bool
	// MakePeer returns a second handle on the store behind cp, opened as
	// another process would open it. The suite calls it only when
	// SharedAcrossProcesses reports true.
	MakePeer(ctx context.Context, t *testing.T, cp sortie.ControlPlane) sortie.ControlPlane
	// Notifies reports whether the control plane implements
	// [sortie.Notifier] and wakes a subscriber before a change made
	// through the same handle returns.
	Notifies() bool
	// LimitsRunSize reports whether the store refuses a run of
	// [sortie.MaxVariablesBytes] of variables with a [sortie.MaxResultBytes]
	// result, neither compressible (DynamoDB's 400 KB item limit does);
	// Finish must then end the attempt with output_too_large, and store
	// the result otherwise.
	LimitsRunSize() bool
	// Close releases what the harness made.
	Close()
}

type property struct {
	name string
	fn   func(t *testing.T, f *fixture)
}

var properties = []property{
	{"ReserveStoresNewRun", testReserveStoresNewRun},
	{"ReserveConcurrentSameKey", testReserveConcurrentSameKey},
	{"ReserveIdempotencyConflict", testReserveIdempotencyConflict},
	{"ReserveExpiredRecordIsAbsent", testReserveExpiredRecord},
	{"ReserveWithoutKeyAlwaysCreates", testReserveWithoutKey},
	{"ReserveWithLaunch", testReserveWithLaunch},
	{"ReserveRefusesBadInput", testReserveBadInput},
	{"UnknownRunNotFound", testUnknownRun},
	{"AppendConcurrentNoGaps", testAppendConcurrent},
	{"AppendAtomicUnderConcurrency", testAppendAtomic},
	{"AppendExplicitSeqs", testAppendExplicitSeqs},
	{"AppendRefusesStaleClaims", testAppendStale},
	{"FinishFirstWins", testFinishFirstWins},
	{"FinishOutputTooLarge", testFinishOutputTooLarge},
	{"UsageOfEngineAndWorker", testUsageOfEngineAndWorker},
	{"BudgetStopsAtHeartbeat", testBudgetStopsAtHeartbeat},
	{"BudgetEndsRetries", testBudgetEndsRetries},
	{"ClaimShapeStopsAtHeartbeat", testClaimShapeStopsAtHeartbeat},
	{"ClaimShapeRefused", testClaimShapeRefused},
	{"AgentBudgetRefusesNextRun", testAgentBudgetRefusesNextRun},
	{"TerminalNeverChanges", testTerminalNeverChanges},
	{"CancelStickyWhileClaimed", testCancelSticky},
	{"CancelUnclaimedAtOnce", testCancelUnclaimed},
	{"ClaimOncePerAttempt", testClaimOnce},
	{"ClaimConditions", testClaimConditions},
	{"RecordLaunchConditions", testRecordLaunchConditions},
	{"SetRef", testSetRef},
	{"RetryAfterRetryableError", testRetryBackoff},
	{"NonRetryableErrorFails", testNonRetryable},
	{"ExpiredLeases", testExpired},
	{"FinishIfVersionLosesToHeartbeat", testFinishIfVersion},
	{"CancelDeadlineBoundsTheLease", testCancelDeadline},
	{"DeferMovesTheNextLook", testDefer},
	{"RetryClearsRunError", testRetryClearsRunError},
	{"InterruptAndResume", testInterruptResume},
	{"ResumeByReference", testResumeByReference},
	{"ListFilters", testListFilters},
	{"ListPagination", testListPagination},
	{"PageTokenOfAnotherStoreRefused", testPageTokenOfAnotherStore},
	{"FollowAcrossAttempts", testFollow},
	{"EventsLimits", testEventsLimits},
	{"ClosedReturnsErrClosed", testClosed},
}

// RunConformanceTests runs every property the driver's capabilities call
// for, each as a subtest with a new harness from newHarness.
func RunConformanceTests(t *testing.T, newHarness func(t *testing.T) Harness) {
	h := newHarness(t)
	shared, notifies := h.SharedAcrossProcesses(), h.Notifies()
	h.Close()
	props := slices.Concat(properties, stepProperties, pushProperties, concurrencyProperties, retentionProperties)
	if notifies {
		props = append(props, property{"NotifierWakesSubscribers", testNotifier})
	}
	if shared {
		props = append(props,
			property{"SharedHandlesSeeEachOther", testSharedVisibility},
			property{"SharedHandlesClaimOnce", testSharedClaims},
			property{"SharedHandlesReserveOnce", testSharedReserve},
			property{"SharedHandlesAppendNoGaps", testSharedAppends},
			property{"SharedHandlesContinueEachOthersPages", testSharedPages},
			property{"SharedHandlesLeasePushOnce", testSharedPushLease},
			property{"SharedHandlesRecordStepsOnce", testSharedSteps})
	}
	for _, p := range props {
		t.Run(p.name, func(t *testing.T) {
			h := newHarness(t)
			defer h.Close()
			ctx := t.Context()
			p.fn(t, &fixture{t: t, ctx: ctx, h: h, cp: h.MakeControlPlane(ctx, t)})
		})
	}
}
