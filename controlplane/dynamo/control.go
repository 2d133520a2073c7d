package dynamo

import (
	"context"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Control items: the agent registry (one small item per agent that has
// runs, so a list of every agent's runs knows the list partitions to
// read) and the lease index watermarks.
const (
	agentsPK      = "CTL#agents"
	agentSK       = "A#"
	watermarkPK   = "CTL#lease"
	controlSK     = "CTL"
	maxRemembered = 100_000
)

// control is what a handle remembers of the control items: the agents it
// knows registered, and the lease index entries it read and found passed
// (a run that ended keeps its entry; its key never changes again).
type control struct {
	mu     sync.Mutex
	agents map[string]bool
	passed map[string]int64
}

func (k *control) known(agent string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.agents[agent]
}

func (k *control) remember(agents ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.agents == nil || len(k.agents) >= maxRemembered {
		k.agents = map[string]bool{}
	}
	for _, a := range agents {
		k.agents[a] = true
	}
}

// isPassed reports whether the lease entry of run pk at key was found passed.
func (k *control) isPassed(pk string, key int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	got, ok := k.passed[pk]
	return ok && got == key
}

func (k *control) pass(pk string, key int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.passed == nil || len(k.passed) >= maxRemembered {
		k.passed = map[string]int64{}
	}
	k.passed[pk] = key
}

// registerAgent makes sure agent is in the registry before a run of it is
// stored: once per handle and agent, an eventually consistent GetItem and,
// when it is missing, a PutItem (idempotent).
func (c *ControlPlane) registerAgent(ctx context.Context, agent string) error {
	if c.control.known(agent) {
		return nil
	}
	key := keyOf(agentsPK, agentSK+agent)
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: key,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	if err != nil {
		c.units.call("", Capacity{})
		return apiErr("read agent registry", err)
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	if len(out.Item) == 0 {
		put, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: key,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		if err != nil {
			c.units.call("", Capacity{})
			return apiErr("register agent "+agent, err)
		}
		c.units.call("", c.units.wrote(capOf(put.ConsumedCapacity)...))
	}
	c.control.remember(agent)
	return nil
}

// agents returns every registered agent, read strongly consistent.
func (c *ControlPlane) agents(ctx context.Context) ([]string, error) {
	p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
		TableName: aws.String(c.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: item{":pk": attrS(agentsPK)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	var out []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return nil, apiErr("read agent registry", err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(page.ConsumedCapacity)...)})
		for _, it := range page.Items {
			out = append(out, strings.TrimPrefix(valS(it, AttrSK), agentSK))
		}
	}
	c.control.remember(out...)
	return out, nil
}

// watermarkAttr is the watermark item's attribute of a lease partition.
func watermarkAttr(partition string) string { return "w" + partition }

// watermarks reads every lease partition's watermark (0 when unset),
// strongly consistent.
func (c *ControlPlane) watermarks(ctx context.Context) (map[string]int64, error) {
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table),
		Key: keyOf(watermarkPK, controlSK), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, apiErr("read lease watermarks", err)
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	marks := map[string]int64{}
	for _, p := range leasePartitions() {
		marks[p] = valN(out.Item, watermarkAttr(p))
	}
	return marks, nil
}

// advance moves partition's watermark up to mark; it never moves down
// (a concurrent reconciler's higher mark wins).
func (c *ControlPlane) advance(ctx context.Context, partition string, mark int64) error {
	out, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(c.table),
		Key:                       keyOf(watermarkPK, controlSK),
		UpdateExpression:          aws.String("SET #w = :w"),
		ConditionExpression:       aws.String("attribute_not_exists(#w) OR #w < :w"),
		ExpressionAttributeNames:  map[string]string{"#w": watermarkAttr(partition)},
		ExpressionAttributeValues: item{":w": attrN(mark)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	if _, lost := conditionFailed(err); lost {
		c.units.call("", Capacity{WriteUnits: 1})
		return nil
	}
	if err != nil {
		c.units.call("", Capacity{})
		return apiErr("advance lease watermark of "+partition, err)
	}
	c.units.call("", c.units.wrote(capOf(out.ConsumedCapacity)...))
	return nil
}

// leasePartitions are the lease index partitions: the shards and the
// partition of tables made before sharding.
func leasePartitions() []string {
	out := []string{legacyLeasePartition}
	for s := range IndexShards {
		out = append(out, LeasePartition(s))
	}
	return out
}
