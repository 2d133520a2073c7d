package main

import (
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
	c.AddCommand(newDynamoCreateTableCmd())
	return c
}

func newDynamoCreateTableCmd() *cobra.Command {
	var table, endpoint, region string
	var ifMissing bool
	c := &cobra.Command{
		Use:   "create-table",
		Short: "Create the DynamoDB table (keys, indexes, TTL) exactly as controlplane/dynamo expects it",
		Long: `create-table creates the single table of the DynamoDB control plane: on-demand
billing, key (pk, sk), the keys-only indexes list, context, lease and push, and TTL
on the ttl attribute. Credentials and region come from the standard AWS
configuration (environment, shared files, instance role).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if table == "" {
				return usagef("--table is required (or SORTIE_DYNAMODB_TABLE)")
			}
			if !tableName.MatchString(table) {
				return usagef("--table %.40q: a DynamoDB table name is 3-255 characters of A-Z, a-z, 0-9, '_', '-' and '.'", table)
			}
			cfg, err := config.LoadDefaultConfig(cmd.Context(), func(o *config.LoadOptions) error {
				if region != "" {
					o.Region = region
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("load AWS configuration: %w", err)
			}
			db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
				if endpoint != "" {
					o.BaseEndpoint = &endpoint
				}
			})
			err = dynamo.CreateTable(cmd.Context(), db, table)
			if ifMissing && dynamo.IsTableExists(err) {
				fmt.Fprintf(os.Stdout, "table %s exists\n", table)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "created table %s\n", table)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&table, "table", envFirst("SORTIE_DYNAMODB_TABLE", "SORTIE_DYNAMO_TABLE"), "table name (env SORTIE_DYNAMODB_TABLE, as the other commands)")
	f.StringVar(&endpoint, "endpoint", os.Getenv("SORTIE_DYNAMODB_ENDPOINT"), "DynamoDB endpoint URL, e.g. DynamoDB Local's (default: the region's; env SORTIE_DYNAMODB_ENDPOINT)")
	f.StringVar(&region, "region", "", "AWS region (default: from the AWS configuration)")
	f.BoolVar(&ifMissing, "if-missing", false, "succeed when the table already exists")
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
