package sqlite

// SchemaVersion is the schema version this build creates, for the
// migration tests of package sqlite_test.
var SchemaVersion = schemaVersion
