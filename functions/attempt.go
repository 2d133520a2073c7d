package functions

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sortie-run/sortie"
)

// masking masks what leaves the attempt from now on: its events, its log
// and (in Execute) its outcome.
func (a *attempt) masking() {
	a.mask = newMasker(a.cfg)
	a.out.mask = a.mask
	a.log = a.mask.logger(a.log)
}

// attempt is one claimed attempt being executed.
type attempt struct {
	w               *Worker // its policies
	webhooks        *webhookRunner
	inv             *sortie.Invocation
	renewedAt       time.Time         // when the claim was sent: the lease counts from it
	cfg             map[string]string // the inline configuration and the references' values
	call            *Call             // the handler's, once it runs
	session         bool              // cfg came opened in a session's invoke frame
	log             *slog.Logger
	client          *http.Client // of the destination policy
	out             *sender
	mask            *masker             // of cfg; nil when it holds nothing to mask
	sealer          StepSealer          // nil without one
	payloadsMu      sync.Mutex          // guards payloads and payloadKMS: steps may run at once
	payloads        sortie.PayloadStore // of payloadStore, once made
	payloadKMS      int                 // key-management requests opening the payload URLs
	stepBytes       atomic.Int64        // bytes of step results this attempt kept by reference
	stepSlots       int                 // step slots its payload URLs grant (set with payloads)
	slotsUsed       atomic.Int64        // step slots taken, in order (stepObject)
	warmSteps       warmStepIO          // step objects its warm process read and wrote
	steps           *journal
	cancel          context.CancelCauseFunc
	cancelRequested atomic.Bool
}
