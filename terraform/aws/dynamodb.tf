# The control plane's single table, exactly as controlplane/dynamo's
# TableDefinition creates it (the contract test in terraform/ compares them):
# on-demand billing, key (pk, sk), six keys-only global secondary indexes
# (list, context, state, lease, push and ended), TTL on ttl (idempotency records,
# Unix seconds) and a stream of keys, which hosts read to wake followers of
# runs written elsewhere. Adding an index or the stream to an existing
# table is an in-place update (indexes are backfilled; nothing is
# replaced): apply this module, then run `sortie dynamo reindex` once to
# move runs made before the sharded and ended indexes into them.
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
    name = "sp"
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
  attribute {
    name = "ep"
    type = "S"
  }
  attribute {
    name = "ek"
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
    name            = "state"
    hash_key        = "sp"
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
  global_secondary_index {
    name            = "ended"
    hash_key        = "ep"
    range_key       = "ek"
    projection_type = "KEYS_ONLY"
  }

  stream_enabled   = true
  stream_view_type = "KEYS_ONLY"

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
