package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Agents' budgets ([sortie.AgentBudget]): one spend item per agent and
// window, CTL#SPEND#<agent> / W#<period ms>#<start ms>, whose [AttrSpent] the
// write that ends a run of the agent adds its cost to (in the same
// TransactWriteItems as the run); its TTL is two periods after the
// window's end. A reservation with a spend limit reads it strongly
// consistent before it stores anything.
const AttrSpent = "ns" // N: spend item: nano-dollars spent in the window

func spendKey(w sortie.SpendWindow) item {
	return keyOf("CTL#SPEND#"+w.Agent, fmt.Sprintf("W#%d#%d", w.PeriodMs, w.StartMs))
}

// spendItems is the transaction item that adds sc to its window, none
// when it adds nothing.
func (c *ControlPlane) spendItems(sc controlplane.SpendChange) []types.TransactWriteItem {
	if sc.NanoUSD == 0 {
		return nil
	}
	ttl := (sc.Window.StartMs + 3*sc.Window.PeriodMs) / 1000
	return []types.TransactWriteItem{{Update: &types.Update{
		TableName: aws.String(c.table), Key: spendKey(sc.Window),
		UpdateExpression:          aws.String("ADD #n :n SET #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#n": AttrSpent, "#ttl": AttrTTL},
		ExpressionAttributeValues: item{":n": attrN(sc.NanoUSD), ":ttl": attrN(ttl)},
	}}}
}

// checkSpend refuses a new run whose agent spent l's limit in its window
// (see [controlplane.CheckSpend]); nil for a nil l.
func (c *ControlPlane) checkSpend(ctx context.Context, l *sortie.SpendLimit) error {
	if l == nil {
		return nil
	}
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: spendKey(l.Window), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return apiErr("read the spend of agent "+l.Window.Agent, err)
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	return controlplane.CheckSpend(l, valN(out.Item, AttrSpent))
}
