package dynamo

import (
	"errors"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
)

// Cancellation reason codes of TransactWriteItems.
const (
	reasonConditionFailed = "ConditionalCheckFailed"
	reasonConflict        = "TransactionConflict"
)

// apiErr names a failed DynamoDB call and maps its error to a sentinel,
// keeping the SDK's error reachable with errors.As:
// ConditionalCheckFailed gives sortie.ErrConflict; throttling
// (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded,
// also when the client's retries or retry quota ran out on it) gives
// sortie.ErrThrottled; transaction conflicts, 5xx answers and network
// failures give sortie.ErrUnavailable.
// Other errors (a missing table, access denied) are returned as they are.
func apiErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if s := sentinel(err); s != nil {
		return fmt.Errorf("%s: %w: %w", what, s, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func sentinel(err error) error {
	var (
		ccf      *types.ConditionalCheckFailedException
		canceled *types.TransactionCanceledException
		resp     *awshttp.ResponseError
		netErr   net.Error
		tries    *retry.MaxAttemptsError
	)
	switch {
	case errors.As(err, &ccf):
		return sortie.ErrConflict
	case errors.As(err, &canceled):
		if hasReason(canceled, reasonConflict) || !hasReason(canceled, reasonConditionFailed) {
			return sortie.ErrUnavailable
		}
		return sortie.ErrConflict
	case throttled(err):
		return sortie.ErrThrottled
	case transient(err):
		return sortie.ErrUnavailable
	case errors.As(err, &resp) && resp.HTTPStatusCode() >= 500:
		return sortie.ErrUnavailable
	case errors.As(err, &netErr), errors.As(err, &tries):
		return sortie.ErrUnavailable
	}
	return nil
}

// transient reports DynamoDB's retry-later exceptions other than throttling.
func transient(err error) bool {
	var (
		ise *types.InternalServerError
		tip *types.TransactionInProgressException
		tce *types.TransactionConflictException
	)
	return errors.As(err, &ise) || errors.As(err, &tip) || errors.As(err, &tce)
}

func hasReason(e *types.TransactionCanceledException, code string) bool {
	for _, r := range e.CancellationReasons {
		if r.Code != nil && *r.Code == code {
			return true
		}
	}
	return false
}

// reason returns the cancellation reason of transaction item i.
func reason(e *types.TransactionCanceledException, i int) (code string, old item) {
	if i >= len(e.CancellationReasons) {
		return "", nil
	}
	r := e.CancellationReasons[i]
	if r.Code != nil {
		code = *r.Code
	}
	return code, r.Item
}

// conditionFailed returns the item a failed conditional write saw
// (ReturnValuesOnConditionCheckFailure=ALL_OLD) and whether err is that
// failure; the item is empty when nothing was stored under the key.
func conditionFailed(err error) (item, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}
