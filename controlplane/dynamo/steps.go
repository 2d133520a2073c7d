package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Durable steps: one item per step, RUN#<id> / STEP#<name>, holding the
// compressed JSON of the step. Its key sorts after the run item (RUN), so
// one Query of [runSK, stepSKHigh] reads the run and its steps. The run
// item counts the run's steps and their result bytes ([AttrStepCount],
// [AttrStepBytes]) for the per-run limits.
const (
	stepPrefix = "STEP#"
	stepSKHigh = "STEP$" // '$' follows '#': above every step key
)

// Attributes of the run item for its steps, absent before the first.
const (
	AttrStepCount = "sn" // N: run item: how many steps the run recorded
	AttrStepBytes = "sb" // N: run item: their result bytes (sortie.Step.Size)
)

func stepKey(id sortie.RunID, name string) item { return keyOf(runPK(id), stepPrefix+name) }

// RecordStep implements [sortie.ControlPlane.RecordStep] with one
// TransactWriteItems of two items: an Update of the run item that counts
// the step (conditional on the version at which the claim was seen live,
// and on the run's room for it) and a Put of the step item (conditional on
// its key being free). The claim is checked on this handle's copy of the
// run when it shows the claim live, else on a strongly consistent read; a
// lost version condition reads the run again and tries again. A taken key
// holding the same step is the earlier record (a no-op), other content
// sortie.ErrConflict.
//
// Capacity: a transactional write costs two write units per KB of each
// item, so a step costs 2 × ⌈run item KB⌉ + 2 × ⌈step item KB⌉ write
// units: 4 for a step under 1 KB with a run item under 1 KB.
func (c *ControlPlane) RecordStep(ctx context.Context, s sortie.StepRecord) (*sortie.Step, error) {
	if err := controlplane.CheckStepRecord(s); err != nil {
		return nil, err
	}
	if err := c.ready("record step"); err != nil {
		return nil, err
	}
	st, err := c.recordStep(ctx, s)
	if err != nil {
		return nil, wrap("record step", err)
	}
	return st, nil
}

func (c *ControlPlane) recordStep(ctx context.Context, s sortie.StepRecord) (*sortie.Step, error) {
	it, err := c.stepRun(ctx, s, c.cache.get(s.RunID))
	for try := 1; err == nil; try++ {
		var st *sortie.Step
		if st, it, err = c.tryStep(ctx, s, it); st != nil || err != nil {
			return st, err
		}
		if try == c.maxTries {
			return nil, fmt.Errorf("record step %q of %s: lost %d conditional writes in a row: %w", s.Step.Name, s.RunID, try, sortie.ErrUnavailable)
		}
		it, err = c.stepRun(ctx, s, it)
	}
	return nil, err
}

// stepRun returns the run item to record s on: it when it shows the claim
// live, else the run read strongly consistent, checked.
func (c *ControlPlane) stepRun(ctx context.Context, s sortie.StepRecord, it item) (item, error) {
	if it != nil {
		if rec, err := decodeRecord(it); err == nil && controlplane.CheckStep(rec.Run, s) == nil {
			return it, nil
		}
	}
	it, rec, err := c.getRun(ctx, s.RunID, true)
	if err != nil {
		return nil, err
	}
	return it, controlplane.CheckStep(rec.Run, s)
}

// tryStep writes s against run item it. It returns the step as stored,
// or, when the run's version moved, no step and the run item that won
// (nil when DynamoDB left it out) to try again on.
func (c *ControlPlane) tryStep(ctx context.Context, s sortie.StepRecord, it item) (*sortie.Step, item, error) {
	count, size := int(valN(it, AttrStepCount)), int(valN(it, AttrStepBytes))
	step, _, err := controlplane.PlaceStep(s, nil, count, size)
	if err != nil {
		return nil, nil, err
	}
	body, err := encodeBody(&step)
	if err != nil {
		return nil, nil, fmt.Errorf("encode step %q of %s: %w", step.Name, s.RunID, err)
	}
	put := stepKey(s.RunID, step.Name)
	put[AttrBody] = attrB(body)
	out, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:          []types.TransactWriteItem{{Update: c.countStep(s.RunID, it, step.Size())}, {Put: c.putStep(put)}},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err == nil {
		c.units.call(s.RunID, c.units.wrote(out.ConsumedCapacity...))
		c.cache.put(s.RunID, counted(it, count+1, size+step.Size()))
		c.hub.Notify(s.RunID)
		return &step, nil, nil
	}
	c.units.call(s.RunID, Capacity{})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil, nil, apiErr(fmt.Sprintf("record step %q of %s", step.Name, s.RunID), err)
	}
	code0, run := reason(tce, 0)
	code1, stored := reason(tce, 1)
	switch {
	case code0 == reasonConditionFailed && (len(run) == 0 || valN(run, AttrVersion) != valN(it, AttrVersion)):
		return nil, run, nil // the version moved: check the claim again
	case code1 == reasonConditionFailed:
		return c.taken(ctx, s, stored)
	case code0 == reasonConditionFailed: // the same version: no room
		return nil, nil, controlplane.CheckStepRoom(s.Step, int(valN(run, AttrStepCount)), int(valN(run, AttrStepBytes)))
	}
	return nil, nil, apiErr(fmt.Sprintf("record step %q of %s", step.Name, s.RunID), err)
}

// countStep is the Update of the run item that counts a step of size
// result bytes, conditional on the version of it and the run's room.
func (c *ControlPlane) countStep(id sortie.RunID, it item, size int) *types.Update {
	return &types.Update{
		TableName: aws.String(c.table), Key: runKey(id),
		UpdateExpression:    aws.String("ADD #sn :one, #sb :size"),
		ConditionExpression: aws.String("#v = :v AND (attribute_not_exists(#sn) OR (#sn < :maxn AND #sb <= :maxb))"),
		ExpressionAttributeNames: map[string]string{
			"#v": AttrVersion, "#sn": AttrStepCount, "#sb": AttrStepBytes},
		ExpressionAttributeValues: item{":v": attrN(valN(it, AttrVersion)), ":one": attrN(1), ":size": attrN(int64(size)),
			":maxn": attrN(sortie.MaxSteps), ":maxb": attrN(int64(sortie.MaxStepsBytes - size))},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

func (c *ControlPlane) putStep(it item) *types.Put {
	return &types.Put{TableName: aws.String(c.table), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": AttrPK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
}

// counted returns run item it with the step counters set.
func counted(it item, count, size int) item {
	out := make(item, len(it)+2)
	for k, v := range it {
		out[k] = v
	}
	out[AttrStepCount], out[AttrStepBytes] = attrN(int64(count)), attrN(int64(size))
	return out
}

// taken decides a record whose step key was taken: the stored step old
// (read strongly consistent when DynamoDB left it out) is s again, a
// record whose answer was lost, or other content.
func (c *ControlPlane) taken(ctx context.Context, s sortie.StepRecord, old item) (*sortie.Step, item, error) {
	if len(old) == 0 {
		got, err := c.getStep(ctx, s.RunID, s.Step.Name)
		if err != nil {
			return nil, nil, err
		}
		old = got
	}
	stored, err := decodeStep(old)
	if err != nil {
		return nil, nil, err
	}
	st, _, err := controlplane.PlaceStep(s, stored, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	return &st, nil, nil
}

func (c *ControlPlane) getStep(ctx context.Context, id sortie.RunID, name string) (item, error) {
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: stepKey(id, name), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, apiErr(fmt.Sprintf("get step %q of %s", name, id), err)
	}
	c.units.call(id, Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("step %q of %s: taken, then gone: %w", name, id, sortie.ErrUnavailable)
	}
	return out.Item, nil
}

func decodeStep(it item) (*sortie.Step, error) {
	var st sortie.Step
	if err := decodeBody(valB(it, AttrBody), &st); err != nil {
		return nil, fmt.Errorf("decode step item %s: %w", valS(it, AttrSK), err)
	}
	return &st, nil
}

// Steps implements [sortie.ControlPlane.Steps] with one strongly
// consistent Query of the run item and its step items (paged past 1 MB).
func (c *ControlPlane) Steps(ctx context.Context, id sortie.RunID) ([]sortie.Step, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := c.ready("steps"); err != nil {
		return nil, err
	}
	steps, err := c.readSteps(ctx, id)
	if err != nil {
		return nil, wrap("steps", err)
	}
	sortie.SortSteps(steps)
	return steps, nil
}

func (c *ControlPlane) readSteps(ctx context.Context, id sortie.RunID) ([]sortie.Step, error) {
	p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
		TableName: aws.String(c.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": attrS(runPK(id)), ":lo": attrS(runSK), ":hi": attrS(stepSKHigh)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	found, steps := false, []sortie.Step{}
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return nil, apiErr("query the steps of run "+string(id), err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		for _, it := range out.Items {
			sk := valS(it, AttrSK)
			if sk == runSK {
				found = true
				continue
			}
			if !strings.HasPrefix(sk, stepPrefix) {
				continue
			}
			st, err := decodeStep(it)
			if err != nil {
				return nil, err
			}
			steps = append(steps, *st)
		}
	}
	if !found {
		return nil, fmt.Errorf("steps of run %s: %w", id, sortie.ErrNotFound)
	}
	return steps, nil
}
