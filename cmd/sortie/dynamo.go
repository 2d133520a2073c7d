package main

import (
	"context"
	"fmt"
	"os"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/spf13/cobra"
)

// newDynamoCmd is `sortie dynamo`: administration of the DynamoDB control
// plane's table.
func newDynamoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "dynamo",
		Short: "Administer the DynamoDB control plane's table",
	}
	c.AddCommand(newDynamoCreateTableCmd(), newDynamoReindexCmd())
	return c
}

// tableFlags are the flags every dynamo command takes, whatever the
// global AWS settings.
type tableFlags struct{ table, endpoint, region string }

func (t *tableFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&t.table, "table", envFirst("SORTIE_DYNAMODB_TABLE", "SORTIE_DYNAMO_TABLE"), "table name (env SORTIE_DYNAMODB_TABLE, as the other commands)")
	f.StringVar(&t.endpoint, "endpoint", os.Getenv("SORTIE_DYNAMODB_ENDPOINT"), "DynamoDB endpoint URL, e.g. DynamoDB Local's (default: the region's; env SORTIE_DYNAMODB_ENDPOINT)")
	f.StringVar(&t.region, "region", "", "AWS region (default: from the AWS configuration)")
}

// client checks the table name and returns a client of the configured
// region and endpoint.
func (t *tableFlags) client(ctx context.Context) (*dynamodb.Client, error) {
	if t.table == "" {
		return nil, usagef("--table is required (or SORTIE_DYNAMODB_TABLE)")
	}
	if !tableName.MatchString(t.table) {
		return nil, usagef("--table %.40q: a DynamoDB table name is 3-255 characters of A-Z, a-z, 0-9, '_', '-' and '.'", t.table)
	}
	cfg, err := config.LoadDefaultConfig(ctx, func(o *config.LoadOptions) error {
		if t.region != "" {
			o.Region = t.region
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if t.endpoint != "" {
			o.BaseEndpoint = &t.endpoint
		}
	}), nil
}

func newDynamoCreateTableCmd() *cobra.Command {
	var t tableFlags
	var ifMissing bool
	c := &cobra.Command{
		Use:   "create-table",
		Short: "Create the DynamoDB table (keys, indexes, stream, TTL) exactly as controlplane/dynamo expects it",
		Long: `create-table creates the single table of the DynamoDB control plane: on-demand
billing, key (pk, sk), the keys-only indexes list, context, state, lease and
push, a stream of keys and TTL on the ttl attribute. It does not change an
existing table (apply the terraform module to add indexes in place, then run
"sortie dynamo reindex"). Credentials and region come from the standard AWS
configuration (environment, shared files, instance role).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := t.client(cmd.Context())
			if err != nil {
				return err
			}
			err = dynamo.CreateTable(cmd.Context(), db, t.table)
			if ifMissing && dynamo.IsTableExists(err) {
				fmt.Fprintf(os.Stdout, "table %s exists\n", t.table)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "created table %s\n", t.table)
			return nil
		},
	}
	t.add(c)
	c.Flags().BoolVar(&ifMissing, "if-missing", false, "succeed when the table already exists")
	return c
}

func newDynamoReindexCmd() *cobra.Command {
	var t tableFlags
	c := &cobra.Command{
		Use:   "reindex",
		Short: "Move runs stored before the sharded list, state, lease and ended indexes into them",
		Long: `reindex scans the table once and moves each run stored by an earlier release
(list partition R, lease partition L, no state index entry, a terminal run with no
ended index entry, which retention reads) into the sharded index partitions, with
writes conditional on the old values, so it is safe
while hosts run; a run changed meanwhile is left for the next reindex. Run it
once after the table has the state index (terraform adds it in place). Until
then lists and the reconciler read the old partitions too.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := t.client(cmd.Context())
			if err != nil {
				return err
			}
			moved, err := dynamo.Reindex(cmd.Context(), db, t.table)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "moved %d runs of table %s\n", moved, t.table)
			return nil
		},
	}
	t.add(c)
	return c
}

// tableName is DynamoDB's rule for table names (CreateTable, TableName).
var tableName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

// envFirst is the first of the variables that is set.
func envFirst(keys ...string) string {
	for _, k := range keys {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}
