# The control plane's single table, exactly as controlplane/dynamo's
# TableDefinition creates it (the contract test in terraform/ compares them):
# on-demand billing, key (pk, sk), four keys-only global secondary indexes
# (list, context, the sparse lease and push indexes) and TTL on ttl
# (idempotency records, Unix seconds). No stream: nothing reads one. Adding
# the push index to an existing table is an in-place update (the table is
# backfilled; nothing is replaced).
resource "aws_dynamodb_table" "runs" {
  name                        = "${var.name}-runs"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "pk"
    type = "S"
  }
  attribute {
    name = "sk"
    type = "S"
  }
  attribute {
    name = "lp"
    type = "S"
  }
  attribute {
    name = "ck"
    type = "S"
  }
  attribute {
    name = "cx"
    type = "S"
  }
  attribute {
    name = "ls"
    type = "S"
  }
  attribute {
    name = "lk"
    type = "N"
  }
  attribute {
    name = "pp"
    type = "S"
  }
  attribute {
    name = "pd"
    type = "N"
  }

  global_secondary_index {
    name            = "list"
    hash_key        = "lp"
    range_key       = "ck"
    projection_type = "KEYS_ONLY"
  }
  global_secondary_index {
    name            = "context"
    hash_key        = "cx"
    range_key       = "ck"
    projection_type = "KEYS_ONLY"
  }
  global_secondary_index {
    name            = "lease"
    hash_key        = "ls"
    range_key       = "lk"
    projection_type = "KEYS_ONLY"
  }
  global_secondary_index {
    name            = "push"
    hash_key        = "pp"
    range_key       = "pd"
    projection_type = "KEYS_ONLY"
  }

  ttl {
    attribute_name = "ttl"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  server_side_encryption {
    enabled = true
  }

  tags = var.tags
}
