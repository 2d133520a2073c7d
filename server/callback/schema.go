package callback

import (
	"embed"
	"sync"

	"github.com/sortie-run/sortie/internal/jsonbody"
)

// schemaFS holds the JSON Schemas (draft 2020-12) of the request bodies.
//
//go:embed schemas/*.json
var schemaFS embed.FS

// schemaBase is the $id prefix of the embedded schemas.
const schemaBase = "https://sortie.run/schemas/callback/"

// schemas are the compiled body schemas by name ("events"), compiled once.
var schemas = sync.OnceValues(func() (jsonbody.Schemas, error) {
	return jsonbody.Compile(schemaFS, "schemas", schemaBase)
})
